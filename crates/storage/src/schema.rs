//! The diesel schema of both engines (one migration tree each under `migrations/`).
//!
//! Generated once from the migrations; keep it in step with them. Ids are `BigInt`,
//! timestamps milliseconds since the epoch (`BigInt`), JSON held as `Text`.

#![cfg_attr(
    feature = "test-support",
    expect(missing_docs, reason = "diesel's table! macros, one per table, as the migrations define them")
)]

diesel::table! {
    users (id) {
        id -> BigInt,
        email -> Text,
        display_name -> Text,
        is_platform_admin -> Bool,
    }
}

diesel::table! {
    workspaces (id) {
        id -> BigInt,
        name -> Text,
    }
}

diesel::table! {
    memberships (workspace_id, user_id) {
        workspace_id -> BigInt,
        user_id -> BigInt,
    }
}

diesel::table! {
    projects (id) {
        id -> BigInt,
        workspace_id -> BigInt,
        name -> Text,
    }
}

diesel::table! {
    project_areas (id) {
        id -> BigInt,
        project_id -> BigInt,
        name -> Text,
    }
}

diesel::table! {
    document_types (id) {
        id -> BigInt,
        workspace_id -> BigInt,
        name -> Text,
        scope -> Text,
    }
}

diesel::table! {
    documents (id) {
        id -> BigInt,
        workspace_id -> BigInt,
        project_id -> Nullable<BigInt>,
        company_id -> Nullable<BigInt>,
        scope -> Text,
        type_id -> Nullable<BigInt>,
        source -> Text,
        status -> Text,
        name -> Text,
        notes -> Text,
        is_confidential -> Bool,
        phases -> Text,
        item_ids -> Text,
        external_url -> Nullable<Text>,
        original_filename -> Nullable<Text>,
        mime_type -> Nullable<Text>,
        size_bytes -> Nullable<BigInt>,
        created_by -> Nullable<BigInt>,
        created_at -> BigInt,
        updated_at -> BigInt,
        version -> BigInt,
    }
}

diesel::table! {
    catalog_families (id) {
        id -> BigInt,
        workspace_id -> BigInt,
        parent_family_id -> Nullable<BigInt>,
        name -> Text,
        description -> Text,
        brand -> Text,
        model_number -> Text,
        finish -> Text,
        material -> Text,
        lead_time -> Text,
        notes -> Text,
        primary_item_id -> Nullable<BigInt>,
        primary_item_version -> Nullable<BigInt>,
        primary_family_source_id -> Nullable<BigInt>,
        primary_family_source_version -> Nullable<BigInt>,
        primary_item_source_id -> Nullable<BigInt>,
        primary_item_source_version -> Nullable<BigInt>,
        version -> BigInt,
    }
}

diesel::table! {
    project_items (id) {
        id -> BigInt,
        project_id -> BigInt,
        family_id -> BigInt,
        name -> Text,
    }
}

diesel::table! {
    assistant_imports (id) {
        id -> BigInt,
        workspace_id -> BigInt,
        kind -> Text,
        status -> Text,
        target_kind -> Text,
        target_project_id -> BigInt,
        version -> BigInt,
        analysis_revision -> BigInt,
        conversation -> Text,
        document -> Text,
        progress -> Text,
        takeoff -> Text,
        source_selection -> Text,
        column_mappings -> Text,
        value_mappings -> Text,
        review_draft -> Text,
        publish_result -> Text,
        source_snapshot -> Text,
        blocking_issues -> BigInt,
        warning_issues -> BigInt,
        publishable -> Bool,
        created_at -> BigInt,
        updated_at -> BigInt,
    }
}

diesel::table! {
    report_exports (id) {
        id -> BigInt,
        workspace_id -> BigInt,
        request_key -> Text,
        request_body -> Text,
        response_body -> Text,
        name -> Text,
        status -> Text,
        configuration -> Text,
        created_by -> BigInt,
        created_at -> BigInt,
        updated_at -> BigInt,
    }
}

diesel::table! {
    global_companies (id) {
        id -> BigInt,
        name -> Text,
        primary_type -> Text,
        legal_name -> Text,
        country -> Text,
        aliases -> Text,
        domains -> Text,
        retired_at -> Nullable<BigInt>,
    }
}

diesel::table! {
    categories (id) {
        id -> BigInt,
        workspace_id -> BigInt,
        name -> Text,
        code -> Nullable<Text>,
        revision -> BigInt,
    }
}

diesel::table! {
    product_types (id) {
        id -> BigInt,
        workspace_id -> BigInt,
        category_id -> BigInt,
        name -> Text,
        code -> Nullable<Text>,
    }
}

diesel::table! {
    item_columns (id) {
        id -> BigInt,
        workspace_id -> BigInt,
        name -> Text,
    }
}

diesel::table! {
    product_type_columns (product_type_id, item_column_id) {
        product_type_id -> BigInt,
        item_column_id -> BigInt,
        is_active -> Bool,
    }
}

diesel::table! {
    contact_companies (id) {
        id -> BigInt,
        workspace_id -> BigInt,
        name -> Text,
        tags -> Text,
        status -> Text,
        primary_person_id -> Nullable<BigInt>,
    }
}

diesel::table! {
    contact_persons (id) {
        id -> BigInt,
        company_id -> BigInt,
        first_name -> Text,
        last_name -> Text,
        email -> Text,
    }
}

diesel::table! {
    company_links (id) {
        id -> BigInt,
        workspace_id -> BigInt,
        main_company_id -> BigInt,
        rep_company_id -> BigInt,
        main_person_id -> BigInt,
        rep_person_id -> BigInt,
        status -> Text,
        created_at -> BigInt,
    }
}

diesel::table! {
    time_log_entries (id) {
        id -> BigInt,
        workspace_id -> BigInt,
        user_id -> BigInt,
        project_id -> BigInt,
        entry_date -> Text,
        phase -> Text,
        hours_centi -> BigInt,
        note -> Text,
        billable -> Bool,
        version -> BigInt,
        updated_at -> BigInt,
    }
}

diesel::table! {
    commercial_receipts (id) {
        id -> BigInt,
        workspace_id -> BigInt,
        project_id -> BigInt,
        project_item_id -> BigInt,
        project_item_name -> Text,
        family_id -> BigInt,
        family_name -> Text,
        primary_image_url -> Text,
        actor_name -> Text,
        outcome -> Text,
        fields -> Text,
        release -> Text,
        created_at -> BigInt,
    }
}

diesel::table! {
    credit_allowances (workspace_id, user_id, cycle) {
        workspace_id -> BigInt,
        user_id -> BigInt,
        cycle -> Text,
        used_credits -> BigInt,
    }
}

diesel::table! {
    credit_resets (id) {
        id -> BigInt,
        workspace_id -> BigInt,
        user_id -> BigInt,
        cycle -> Text,
        reason -> Text,
        reset_by -> BigInt,
        created_at -> BigInt,
    }
}

diesel::table! {
    logins (id) {
        id -> BigInt,
        user_id -> BigInt,
        created_at -> BigInt,
        revoked_at -> Nullable<BigInt>,
    }
}

diesel::table! {
    tokens (id) {
        id -> BigInt,
        login_id -> BigInt,
        kind -> Text,
        token_hash -> Text,
        expires_at -> BigInt,
        spent_at -> Nullable<BigInt>,
        created_at -> BigInt,
    }
}

diesel::table! {
    audit_log (id) {
        id -> BigInt,
        actor_user_id -> BigInt,
        action -> Text,
        target -> Text,
        reason -> Text,
        detail -> Text,
        created_at -> BigInt,
    }
}

diesel::joinable!(tokens -> logins (login_id));
diesel::joinable!(logins -> users (user_id));
diesel::joinable!(memberships -> workspaces (workspace_id));
diesel::joinable!(project_areas -> projects (project_id));
diesel::joinable!(project_items -> projects (project_id));
diesel::joinable!(contact_persons -> contact_companies (company_id));
diesel::joinable!(product_types -> categories (category_id));

diesel::allow_tables_to_appear_in_same_query!(
    users,
    workspaces,
    memberships,
    projects,
    project_areas,
    document_types,
    documents,
    catalog_families,
    project_items,
    assistant_imports,
    report_exports,
    global_companies,
    categories,
    product_types,
    item_columns,
    product_type_columns,
    contact_companies,
    contact_persons,
    company_links,
    time_log_entries,
    commercial_receipts,
    credit_allowances,
    credit_resets,
    logins,
    tokens,
    audit_log,
);

diesel::table! {
    server_secrets (name) {
        name -> Text,
        value -> Text,
    }
}

diesel::table! {
    rate_limit_windows (key, window_start) {
        key -> Text,
        window_start -> BigInt,
        hits -> BigInt,
    }
}
