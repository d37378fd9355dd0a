-- Every record the eleven operations touch. Ids are 64-bit integers (served as decimal
-- strings); timestamps are milliseconds since the Unix epoch, UTC; lists and free-form
-- objects are JSON text.

CREATE TABLE users (
    id INTEGER PRIMARY KEY NOT NULL,
    email TEXT NOT NULL,
    display_name TEXT NOT NULL,
    is_platform_admin BOOLEAN NOT NULL DEFAULT 0
);

CREATE TABLE workspaces (
    id INTEGER PRIMARY KEY NOT NULL,
    name TEXT NOT NULL
);

CREATE TABLE memberships (
    workspace_id BIGINT NOT NULL REFERENCES workspaces (id),
    user_id BIGINT NOT NULL REFERENCES users (id),
    PRIMARY KEY (workspace_id, user_id)
);

CREATE TABLE projects (
    id INTEGER PRIMARY KEY NOT NULL,
    workspace_id BIGINT NOT NULL REFERENCES workspaces (id),
    name TEXT NOT NULL
);
CREATE INDEX projects_workspace ON projects (workspace_id);

CREATE TABLE project_areas (
    id INTEGER PRIMARY KEY NOT NULL,
    project_id BIGINT NOT NULL REFERENCES projects (id),
    name TEXT NOT NULL
);
CREATE INDEX project_areas_project ON project_areas (project_id);

CREATE TABLE document_types (
    id INTEGER PRIMARY KEY NOT NULL,
    workspace_id BIGINT NOT NULL REFERENCES workspaces (id),
    name TEXT NOT NULL,
    scope TEXT NOT NULL
);
CREATE INDEX document_types_workspace ON document_types (workspace_id, scope);

CREATE TABLE documents (
    id INTEGER PRIMARY KEY NOT NULL,
    workspace_id BIGINT NOT NULL REFERENCES workspaces (id),
    project_id BIGINT REFERENCES projects (id),
    company_id BIGINT,
    scope TEXT NOT NULL,
    type_id BIGINT REFERENCES document_types (id),
    source TEXT NOT NULL,
    status TEXT NOT NULL,
    name TEXT NOT NULL,
    notes TEXT NOT NULL,
    is_confidential BOOLEAN NOT NULL,
    phases TEXT NOT NULL,
    item_ids TEXT NOT NULL,
    external_url TEXT,
    original_filename TEXT,
    mime_type TEXT,
    size_bytes BIGINT,
    created_by BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    version BIGINT NOT NULL
);
CREATE INDEX documents_project ON documents (project_id);

CREATE TABLE catalog_families (
    id INTEGER PRIMARY KEY NOT NULL,
    workspace_id BIGINT NOT NULL REFERENCES workspaces (id),
    parent_family_id BIGINT REFERENCES catalog_families (id),
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    brand TEXT NOT NULL,
    model_number TEXT NOT NULL,
    finish TEXT NOT NULL,
    material TEXT NOT NULL,
    lead_time TEXT NOT NULL,
    notes TEXT NOT NULL,
    primary_item_id BIGINT,
    primary_item_version BIGINT,
    primary_family_source_id BIGINT,
    primary_family_source_version BIGINT,
    primary_item_source_id BIGINT,
    primary_item_source_version BIGINT,
    version BIGINT NOT NULL
);
CREATE INDEX catalog_families_workspace ON catalog_families (workspace_id);

CREATE TABLE project_items (
    id INTEGER PRIMARY KEY NOT NULL,
    project_id BIGINT NOT NULL REFERENCES projects (id),
    family_id BIGINT NOT NULL REFERENCES catalog_families (id),
    name TEXT NOT NULL
);
CREATE INDEX project_items_family ON project_items (family_id);

CREATE TABLE assistant_imports (
    id INTEGER PRIMARY KEY NOT NULL,
    workspace_id BIGINT NOT NULL REFERENCES workspaces (id),
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    target_kind TEXT NOT NULL,
    target_project_id BIGINT NOT NULL REFERENCES projects (id),
    version BIGINT NOT NULL,
    analysis_revision BIGINT NOT NULL,
    conversation TEXT NOT NULL,
    document TEXT NOT NULL,
    progress TEXT NOT NULL,
    takeoff TEXT NOT NULL,
    source_selection TEXT NOT NULL,
    column_mappings TEXT NOT NULL,
    value_mappings TEXT NOT NULL,
    review_draft TEXT NOT NULL,
    publish_result TEXT NOT NULL,
    source_snapshot TEXT NOT NULL,
    blocking_issues BIGINT NOT NULL,
    warning_issues BIGINT NOT NULL,
    publishable BOOLEAN NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX assistant_imports_workspace ON assistant_imports (workspace_id);

CREATE TABLE report_exports (
    id INTEGER PRIMARY KEY NOT NULL,
    workspace_id BIGINT NOT NULL REFERENCES workspaces (id),
    request_key TEXT NOT NULL,
    request_body TEXT NOT NULL,
    response_body TEXT NOT NULL,
    name TEXT NOT NULL,
    status TEXT NOT NULL,
    configuration TEXT NOT NULL,
    created_by BIGINT NOT NULL REFERENCES users (id),
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (workspace_id, request_key)
);

CREATE TABLE global_companies (
    id INTEGER PRIMARY KEY NOT NULL,
    name TEXT NOT NULL,
    primary_type TEXT NOT NULL,
    legal_name TEXT NOT NULL,
    country TEXT NOT NULL,
    aliases TEXT NOT NULL,
    domains TEXT NOT NULL,
    retired_at BIGINT
);

CREATE TABLE categories (
    id INTEGER PRIMARY KEY NOT NULL,
    workspace_id BIGINT NOT NULL REFERENCES workspaces (id),
    name TEXT NOT NULL,
    code TEXT,
    revision BIGINT NOT NULL
);
CREATE INDEX categories_workspace ON categories (workspace_id);

CREATE TABLE product_types (
    id INTEGER PRIMARY KEY NOT NULL,
    workspace_id BIGINT NOT NULL REFERENCES workspaces (id),
    category_id BIGINT NOT NULL REFERENCES categories (id),
    name TEXT NOT NULL,
    code TEXT
);
CREATE INDEX product_types_workspace ON product_types (workspace_id);

CREATE TABLE item_columns (
    id INTEGER PRIMARY KEY NOT NULL,
    workspace_id BIGINT NOT NULL REFERENCES workspaces (id),
    name TEXT NOT NULL
);

CREATE TABLE product_type_columns (
    product_type_id BIGINT NOT NULL REFERENCES product_types (id),
    item_column_id BIGINT NOT NULL REFERENCES item_columns (id),
    is_active BOOLEAN NOT NULL,
    PRIMARY KEY (product_type_id, item_column_id)
);

CREATE TABLE contact_companies (
    id INTEGER PRIMARY KEY NOT NULL,
    workspace_id BIGINT NOT NULL REFERENCES workspaces (id),
    name TEXT NOT NULL,
    tags TEXT NOT NULL,
    status TEXT NOT NULL,
    primary_person_id BIGINT
);

CREATE TABLE contact_persons (
    id INTEGER PRIMARY KEY NOT NULL,
    company_id BIGINT NOT NULL REFERENCES contact_companies (id),
    first_name TEXT NOT NULL,
    last_name TEXT NOT NULL,
    email TEXT NOT NULL
);
CREATE INDEX contact_persons_company ON contact_persons (company_id);

CREATE TABLE company_links (
    id INTEGER PRIMARY KEY NOT NULL,
    workspace_id BIGINT NOT NULL REFERENCES workspaces (id),
    main_company_id BIGINT NOT NULL REFERENCES contact_companies (id),
    rep_company_id BIGINT NOT NULL REFERENCES contact_companies (id),
    main_person_id BIGINT NOT NULL REFERENCES contact_persons (id),
    rep_person_id BIGINT NOT NULL REFERENCES contact_persons (id),
    status TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX company_links_pair ON company_links (workspace_id, main_company_id, rep_company_id);

CREATE TABLE time_log_entries (
    id INTEGER PRIMARY KEY NOT NULL,
    workspace_id BIGINT NOT NULL REFERENCES workspaces (id),
    user_id BIGINT NOT NULL REFERENCES users (id),
    project_id BIGINT NOT NULL REFERENCES projects (id),
    entry_date TEXT NOT NULL,
    phase TEXT NOT NULL,
    hours_centi BIGINT NOT NULL,
    note TEXT NOT NULL,
    billable BOOLEAN NOT NULL,
    version BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (user_id, project_id, entry_date, phase)
);

CREATE TABLE commercial_receipts (
    id INTEGER PRIMARY KEY NOT NULL,
    workspace_id BIGINT NOT NULL REFERENCES workspaces (id),
    project_id BIGINT NOT NULL REFERENCES projects (id),
    project_item_id BIGINT NOT NULL,
    project_item_name TEXT NOT NULL,
    family_id BIGINT NOT NULL,
    family_name TEXT NOT NULL,
    primary_image_url TEXT NOT NULL,
    actor_name TEXT NOT NULL,
    outcome TEXT NOT NULL,
    fields TEXT NOT NULL,
    release TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX commercial_receipts_page ON commercial_receipts (project_id, created_at DESC, id DESC);
CREATE INDEX commercial_receipts_outcome_page ON commercial_receipts (project_id, outcome, created_at DESC, id DESC);

CREATE TABLE credit_allowances (
    workspace_id BIGINT NOT NULL REFERENCES workspaces (id),
    user_id BIGINT NOT NULL REFERENCES users (id),
    cycle TEXT NOT NULL,
    used_credits BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, user_id, cycle)
);

CREATE TABLE credit_resets (
    id INTEGER PRIMARY KEY NOT NULL,
    workspace_id BIGINT NOT NULL REFERENCES workspaces (id),
    user_id BIGINT NOT NULL REFERENCES users (id),
    cycle TEXT NOT NULL,
    reason TEXT NOT NULL,
    reset_by BIGINT NOT NULL REFERENCES users (id),
    created_at BIGINT NOT NULL
);

CREATE TABLE logins (
    id INTEGER PRIMARY KEY NOT NULL,
    user_id BIGINT NOT NULL REFERENCES users (id),
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);

CREATE TABLE tokens (
    id INTEGER PRIMARY KEY NOT NULL,
    login_id BIGINT NOT NULL REFERENCES logins (id),
    kind TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    expires_at BIGINT NOT NULL,
    spent_at BIGINT,
    created_at BIGINT NOT NULL
);
CREATE INDEX tokens_login ON tokens (login_id);

CREATE TABLE audit_log (
    id INTEGER PRIMARY KEY NOT NULL,
    actor_user_id BIGINT NOT NULL REFERENCES users (id),
    action TEXT NOT NULL,
    target TEXT NOT NULL,
    reason TEXT NOT NULL,
    detail TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
