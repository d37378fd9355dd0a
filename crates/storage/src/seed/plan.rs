//! The load plan: the file's records as the tables' rows ([`crate::models`]; ids and
//! timestamps parsed, JSON sub-objects as text), each with the name of the record it came
//! from, plus the references between records that are checked before anything is written.

use super::SeedProblem;
use super::fixture::{self, Fixture};
use crate::clock::parse_millis;
use crate::ids;
use crate::models;
use crate::repos::takeoff::issue_counts;
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// One row to insert and the record it came from (`documents[3] (id "12")`).
pub(super) struct Labelled<T> {
    pub label: String,
    pub value: T,
}

/// A record another record names, and what it must be like.
#[derive(Debug, Clone)]
enum Target {
    User(i64),
    Workspace(i64),
    /// A project, in `workspace` when one is given.
    Project {
        id: i64,
        workspace: Option<i64>,
    },
    DocumentType {
        id: i64,
        workspace: i64,
        scope: String,
    },
    /// A family in the workspace of a project (when the project exists).
    FamilyOfProject {
        id: i64,
        project: i64,
    },
    /// A parent family: in the database, or earlier in the file than its child.
    ParentFamily {
        id: i64,
        workspace: i64,
        child_position: usize,
    },
    ProductType(i64),
    /// An item column in the workspace of a product type (when the product type exists).
    ColumnOfProductType {
        id: i64,
        product_type: i64,
    },
    Company {
        id: i64,
        workspace: i64,
    },
    Person {
        id: i64,
        company: i64,
    },
}

/// One reference of the file, checked before anything is written.
struct Reference {
    label: String,
    pointer: String,
    target: Target,
}

/// What is known about the records references may name: first from the file, then
/// completed from the database.
#[derive(Debug, Default)]
pub(super) struct Known {
    pub users: HashSet<i64>,
    pub workspaces: HashSet<i64>,
    /// Project → workspace.
    pub projects: HashMap<i64, i64>,
    /// Document type → (workspace, scope).
    pub document_types: HashMap<i64, (i64, String)>,
    /// Family → workspace.
    pub families: HashMap<i64, i64>,
    /// Product type → workspace.
    pub product_types: HashMap<i64, i64>,
    /// Item column → workspace.
    pub item_columns: HashMap<i64, i64>,
    /// Contact company → workspace.
    pub companies: HashMap<i64, i64>,
    /// Contact person → company.
    pub persons: HashMap<i64, i64>,
    /// Area ids (as the takeoff names them) of the projects imports target.
    pub areas: HashMap<i64, HashSet<String>>,
}

impl Known {
    /// Adds what the database knows; the file's own records win.
    pub fn absorb(&mut self, db: Known) {
        self.users.extend(db.users);
        self.workspaces.extend(db.workspaces);
        fn merge<V>(into: &mut HashMap<i64, V>, from: HashMap<i64, V>) {
            for (id, value) in from {
                into.entry(id).or_insert(value);
            }
        }
        merge(&mut self.projects, db.projects);
        merge(&mut self.document_types, db.document_types);
        merge(&mut self.families, db.families);
        merge(&mut self.product_types, db.product_types);
        merge(&mut self.item_columns, db.item_columns);
        merge(&mut self.companies, db.companies);
        merge(&mut self.persons, db.persons);
        for (project, areas) in db.areas {
            self.areas.entry(project).or_default().extend(areas);
        }
    }
}

/// The ids to look up in the database: referenced, but not defined by the file.
#[derive(Debug, Default)]
pub(super) struct Wanted {
    pub users: Vec<i64>,
    pub workspaces: Vec<i64>,
    pub projects: Vec<i64>,
    pub document_types: Vec<i64>,
    pub families: Vec<i64>,
    pub product_types: Vec<i64>,
    pub item_columns: Vec<i64>,
    pub companies: Vec<i64>,
    pub persons: Vec<i64>,
    /// Projects whose areas the database may hold (every import target).
    pub area_projects: Vec<i64>,
}

/// Everything the file asks to insert, in dependency order, with its references.
#[derive(Default)]
pub(super) struct Plan {
    pub users: Vec<Labelled<models::UserRow>>,
    pub workspaces: Vec<Labelled<models::WorkspaceRow>>,
    pub memberships: Vec<Labelled<models::MembershipRow>>,
    pub projects: Vec<Labelled<models::ProjectRow>>,
    pub project_areas: Vec<Labelled<models::ProjectAreaRow>>,
    pub document_types: Vec<Labelled<models::DocumentTypeRow>>,
    pub catalog_families: Vec<Labelled<models::CatalogFamilyRow>>,
    pub project_items: Vec<Labelled<models::ProjectItemRow>>,
    pub documents: Vec<Labelled<models::DocumentRow>>,
    pub assistant_imports: Vec<Labelled<models::AssistantImportRow>>,
    pub global_companies: Vec<Labelled<models::GlobalCompanyRow>>,
    pub categories: Vec<Labelled<models::CategoryRow>>,
    pub product_types: Vec<Labelled<models::ProductTypeRow>>,
    pub item_columns: Vec<Labelled<models::ItemColumnRow>>,
    pub product_type_columns: Vec<Labelled<models::ProductTypeColumnRow>>,
    pub contact_companies: Vec<Labelled<models::ContactCompanyRow>>,
    pub contact_persons: Vec<Labelled<models::ContactPersonRow>>,
    pub company_links: Vec<Labelled<models::CompanyLinkRow>>,
    pub commercial_receipts: Vec<Labelled<models::CommercialReceiptRow>>,
    pub credit_allowances: Vec<Labelled<models::CreditAllowanceRow>>,
    pub time_log_entries: Vec<Labelled<models::TimeLogEntryRow>>,
    /// What the file itself defines.
    file: Known,
    /// Position of each family in `catalogFamilies`.
    family_positions: HashMap<i64, usize>,
    /// The takeoff of each import, parallel to `assistant_imports`.
    takeoffs: Vec<Value>,
    references: Vec<Reference>,
}

/// The name of a record in messages: `documents[3] (id "12")`.
pub(super) fn record_label(list: &str, index: usize, id: Option<&str>) -> String {
    match id {
        Some(id) => format!("{list}[{index}] (id \"{id}\")"),
        None => format!("{list}[{index}]"),
    }
}

/// Collects rows, references and problems while the file is converted.
struct Builder {
    plan: Plan,
    problems: Vec<SeedProblem>,
    /// (table, key) → the record that used it first.
    keys: HashMap<(&'static str, String), String>,
    /// Time-log cells seen: (user, project, date, phase) → record.
    cells: HashMap<(i64, i64, String, String), String>,
    now: i64,
}

impl Builder {
    fn problem(&mut self, label: &str, pointer: &str, message: impl Into<String>) {
        self.problems.push(SeedProblem {
            record: label.to_owned(),
            pointer: pointer.to_owned(),
            message: message.into(),
        });
    }

    /// The id `text` names; a problem when it is beyond the 64-bit range.
    fn id(&mut self, label: &str, pointer: &str, text: &str) -> i64 {
        match ids::parse(text) {
            Some(id) => id,
            None => {
                self.problem(label, pointer, format!("\"{text}\" is not an id within the 64-bit range"));
                0
            }
        }
    }

    fn opt_id(&mut self, label: &str, pointer: &str, text: Option<&str>) -> Option<i64> {
        text.map(|text| self.id(label, pointer, text))
    }

    fn millis(&mut self, label: &str, pointer: &str, text: &str) -> i64 {
        match parse_millis(text) {
            Some(millis) => millis,
            None => {
                self.problem(label, pointer, format!("\"{text}\" is not an RFC 3339 timestamp"));
                0
            }
        }
    }

    fn value(&mut self, label: &str, pointer: &str, value: &impl serde::Serialize) -> Value {
        match serde_json::to_value(value) {
            Ok(value) => value,
            Err(e) => {
                self.problem(label, pointer, format!("cannot be stored as JSON: {e}"));
                Value::Null
            }
        }
    }

    fn json(&mut self, label: &str, pointer: &str, value: &impl serde::Serialize) -> String {
        match serde_json::to_string(value) {
            Ok(text) => text,
            Err(e) => {
                self.problem(label, pointer, format!("cannot be stored as JSON: {e}"));
                String::new()
            }
        }
    }

    /// Records that `key` of `table` (`shown` in messages) is used by `label`; a problem
    /// when the file uses it twice.
    fn unique(&mut self, table: &'static str, key: String, shown: &str, label: &str, pointer: &str) {
        match self.keys.get(&(table, key.clone())) {
            Some(first) => {
                let message = format!("{shown} is already used by {first}");
                self.problem(label, pointer, message);
            }
            None => {
                self.keys.insert((table, key), label.to_owned());
            }
        }
    }

    fn refer(&mut self, label: &str, pointer: &str, target: Target) {
        self.plan.references.push(Reference { label: label.to_owned(), pointer: pointer.to_owned(), target });
    }
}

impl Plan {
    /// Converts the file into rows, reporting every value the schema cannot check (an id
    /// beyond 64 bits, an unreadable timestamp, more than 24 hours, a key used twice).
    pub fn build(fixture: Fixture, now: i64) -> Result<Plan, Vec<SeedProblem>> {
        let mut b = Builder {
            plan: Plan::default(),
            problems: Vec::new(),
            keys: HashMap::new(),
            cells: HashMap::new(),
            now,
        };
        users(&mut b, fixture.users.unwrap_or_default());
        workspaces(&mut b, fixture.workspaces.unwrap_or_default());
        projects(&mut b, fixture.projects.unwrap_or_default());
        document_types(&mut b, fixture.document_types.unwrap_or_default());
        catalog_families(&mut b, fixture.catalog_families.unwrap_or_default());
        project_items(&mut b, fixture.project_items.unwrap_or_default());
        documents(&mut b, fixture.documents.unwrap_or_default());
        assistant_imports(&mut b, fixture.assistant_imports.unwrap_or_default());
        global_companies(&mut b, fixture.global_companies.unwrap_or_default());
        categories(&mut b, fixture.categories.unwrap_or_default());
        item_columns(&mut b, fixture.item_columns.unwrap_or_default());
        product_type_columns(&mut b, fixture.product_type_columns.unwrap_or_default());
        contact_companies(&mut b, fixture.contact_companies.unwrap_or_default());
        company_links(&mut b, fixture.company_links.unwrap_or_default());
        commercial_receipts(&mut b, fixture.commercial_receipts.unwrap_or_default());
        credit_allowances(&mut b, fixture.credit_allowances.unwrap_or_default());
        time_log_entries(&mut b, fixture.time_log_entries.unwrap_or_default());
        if b.problems.is_empty() { Ok(b.plan) } else { Err(b.problems) }
    }

    /// The referenced records the file does not define, to look up in the database.
    pub fn wanted(&self) -> Wanted {
        let file = &self.file;
        let mut wanted = Wanted::default();
        for reference in &self.references {
            match &reference.target {
                Target::User(id) if !file.users.contains(id) => wanted.users.push(*id),
                Target::Workspace(id) if !file.workspaces.contains(id) => wanted.workspaces.push(*id),
                Target::Project { id, .. } if !file.projects.contains_key(id) => wanted.projects.push(*id),
                Target::DocumentType { id, .. } if !file.document_types.contains_key(id) => {
                    wanted.document_types.push(*id)
                }
                Target::FamilyOfProject { id, .. } | Target::ParentFamily { id, .. }
                    if !file.families.contains_key(id) =>
                {
                    wanted.families.push(*id)
                }
                Target::ProductType(id) if !file.product_types.contains_key(id) => {
                    wanted.product_types.push(*id)
                }
                Target::ColumnOfProductType { id, .. } if !file.item_columns.contains_key(id) => {
                    wanted.item_columns.push(*id)
                }
                Target::Company { id, .. } if !file.companies.contains_key(id) => wanted.companies.push(*id),
                Target::Person { id, .. } if !file.persons.contains_key(id) => wanted.persons.push(*id),
                _ => {}
            }
        }
        wanted.area_projects = self.assistant_imports.iter().map(|row| row.value.target_project_id).collect();
        for list in [
            &mut wanted.users,
            &mut wanted.workspaces,
            &mut wanted.projects,
            &mut wanted.document_types,
            &mut wanted.families,
            &mut wanted.product_types,
            &mut wanted.item_columns,
            &mut wanted.companies,
            &mut wanted.persons,
            &mut wanted.area_projects,
        ] {
            list.sort_unstable();
            list.dedup();
        }
        wanted
    }

    /// What the file defines, completed with what the database holds.
    pub fn known_with(&self, db: Known) -> Known {
        let file = &self.file;
        let mut known = Known {
            users: file.users.clone(),
            workspaces: file.workspaces.clone(),
            projects: file.projects.clone(),
            document_types: file.document_types.clone(),
            families: file.families.clone(),
            product_types: file.product_types.clone(),
            item_columns: file.item_columns.clone(),
            companies: file.companies.clone(),
            persons: file.persons.clone(),
            areas: file.areas.clone(),
        };
        known.absorb(db);
        known
    }

    /// Every reference that names nothing, or a record of another workspace (or kind).
    pub fn check(&self, known: &Known) -> Vec<SeedProblem> {
        let mut problems = Vec::new();
        for reference in &self.references {
            if let Some(message) = broken(&reference.target, known, &self.family_positions) {
                problems.push(SeedProblem {
                    record: reference.label.clone(),
                    pointer: reference.pointer.clone(),
                    message,
                });
            }
        }
        problems
    }

    /// Fills in each import's issue counts from its takeoff and its project's areas.
    pub fn count_issues(&mut self, known: &Known) {
        let none = HashSet::new();
        for (row, takeoff) in self.assistant_imports.iter_mut().zip(&self.takeoffs) {
            let areas = known.areas.get(&row.value.target_project_id).unwrap_or(&none);
            let counts = issue_counts(takeoff, areas);
            row.value.blocking_issues = counts.blocking;
            row.value.warning_issues = counts.warning;
            row.value.publishable = counts.publishable();
        }
    }
}

/// Why `target` does not hold, if it does not.
fn broken(target: &Target, known: &Known, family_positions: &HashMap<i64, usize>) -> Option<String> {
    fn in_workspace(what: &str, id: i64, actual: Option<&i64>, expected: i64) -> Option<String> {
        match actual {
            None => Some(format!("{what} {id} does not exist")),
            Some(&workspace) if workspace != expected => {
                Some(format!("{what} {id} is in workspace {workspace}, not in workspace {expected}"))
            }
            Some(_) => None,
        }
    }
    match target {
        Target::User(id) => (!known.users.contains(id)).then(|| format!("user {id} does not exist")),
        Target::Workspace(id) => {
            (!known.workspaces.contains(id)).then(|| format!("workspace {id} does not exist"))
        }
        Target::Project { id, workspace: None } => {
            (!known.projects.contains_key(id)).then(|| format!("project {id} does not exist"))
        }
        Target::Project { id, workspace: Some(workspace) } => {
            in_workspace("project", *id, known.projects.get(id), *workspace)
        }
        Target::DocumentType { id, workspace, scope } => match known.document_types.get(id) {
            None => Some(format!("document type {id} does not exist")),
            Some((actual, _)) if actual != workspace => {
                Some(format!("document type {id} is in workspace {actual}, not in workspace {workspace}"))
            }
            Some((_, actual)) if actual != scope => {
                Some(format!("document type {id} applies to scope {actual}, not to scope {scope}"))
            }
            Some(_) => None,
        },
        Target::FamilyOfProject { id, project } => {
            match (known.families.get(id), known.projects.get(project)) {
                (None, _) => Some(format!("catalog family {id} does not exist")),
                (Some(family), Some(workspace)) if family != workspace => Some(format!(
                    "catalog family {id} is in workspace {family}, not in workspace {workspace} of project {project}"
                )),
                _ => None,
            }
        }
        Target::ParentFamily { id, workspace, child_position } => {
            match family_positions.get(id) {
                Some(position) if position == child_position => {
                    return Some(format!("catalog family {id} cannot be its own parent"));
                }
                Some(position) if position > child_position => {
                    return Some(format!(
                        "catalog family {id} comes after its child in catalogFamilies; parents must come first"
                    ));
                }
                _ => {}
            }
            in_workspace("catalog family", *id, known.families.get(id), *workspace)
        }
        Target::ProductType(id) => {
            (!known.product_types.contains_key(id)).then(|| format!("product type {id} does not exist"))
        }
        Target::ColumnOfProductType { id, product_type } => {
            match (known.item_columns.get(id), known.product_types.get(product_type)) {
                (None, _) => Some(format!("item column {id} does not exist")),
                (Some(column), Some(workspace)) if column != workspace => Some(format!(
                    "item column {id} is in workspace {column}, not in workspace {workspace} of product type {product_type}"
                )),
                _ => None,
            }
        }
        Target::Company { id, workspace } => {
            in_workspace("contact company", *id, known.companies.get(id), *workspace)
        }
        Target::Person { id, company } => match known.persons.get(id) {
            None => Some(format!("contact person {id} does not exist")),
            Some(actual) if actual != company => {
                Some(format!("contact person {id} belongs to contact company {actual}, not to {company}"))
            }
            Some(_) => None,
        },
    }
}

fn users(b: &mut Builder, list: Vec<fixture::User>) {
    for (i, user) in list.into_iter().enumerate() {
        let label = record_label("users", i, Some(&user.id));
        let at = format!("/users/{i}");
        let id = b.id(&label, &format!("{at}/id"), &user.id);
        b.unique("users", id.to_string(), &format!("user {id}"), &label, &format!("{at}/id"));
        b.plan.file.users.insert(id);
        let value = models::UserRow {
            id,
            email: user.email,
            display_name: user.display_name,
            is_platform_admin: user.platform_admin.unwrap_or(false),
        };
        b.plan.users.push(Labelled { label, value });
    }
}

fn workspaces(b: &mut Builder, list: Vec<fixture::Workspace>) {
    for (i, workspace) in list.into_iter().enumerate() {
        let label = record_label("workspaces", i, Some(&workspace.id));
        let at = format!("/workspaces/{i}");
        let id = b.id(&label, &format!("{at}/id"), &workspace.id);
        b.unique("workspaces", id.to_string(), &format!("workspace {id}"), &label, &format!("{at}/id"));
        b.plan.file.workspaces.insert(id);
        for (j, member) in workspace.member_ids.iter().enumerate() {
            let pointer = format!("{at}/memberIds/{j}");
            let user = b.id(&label, &pointer, member);
            b.refer(&label, &pointer, Target::User(user));
            let member_label = format!("workspaces[{i}].memberIds[{j}] (user \"{member}\")");
            b.plan.memberships.push(Labelled {
                label: member_label,
                value: models::MembershipRow { workspace_id: id, user_id: user },
            });
        }
        b.plan.workspaces.push(Labelled { label, value: models::WorkspaceRow { id, name: workspace.name } });
    }
}

fn projects(b: &mut Builder, list: Vec<fixture::Project>) {
    for (i, project) in list.into_iter().enumerate() {
        let label = record_label("projects", i, Some(&project.id));
        let at = format!("/projects/{i}");
        let id = b.id(&label, &format!("{at}/id"), &project.id);
        b.unique("projects", id.to_string(), &format!("project {id}"), &label, &format!("{at}/id"));
        let workspace = b.id(&label, &format!("{at}/workspaceId"), &project.workspace_id);
        b.refer(&label, &format!("{at}/workspaceId"), Target::Workspace(workspace));
        b.plan.file.projects.insert(id, workspace);
        let areas = b.plan.file.areas.entry(id).or_default();
        areas.extend(project.areas.iter().map(|area| area.id.clone()));
        for (j, area) in project.areas.into_iter().enumerate() {
            let pointer = format!("{at}/areas/{j}/id");
            let area_id = b.id(&label, &pointer, &area.id);
            b.unique("project_areas", area_id.to_string(), &format!("area {area_id}"), &label, &pointer);
            let area_label = format!("projects[{i}].areas[{j}] (id \"{}\")", area.id);
            b.plan.project_areas.push(Labelled {
                label: area_label,
                value: models::ProjectAreaRow { id: area_id, project_id: id, name: area.name },
            });
        }
        b.plan.projects.push(Labelled {
            label,
            value: models::ProjectRow { id, workspace_id: workspace, name: project.name },
        });
    }
}

fn document_types(b: &mut Builder, list: Vec<fixture::DocumentType>) {
    for (i, kind) in list.into_iter().enumerate() {
        let label = record_label("documentTypes", i, Some(&kind.id));
        let at = format!("/documentTypes/{i}");
        let id = b.id(&label, &format!("{at}/id"), &kind.id);
        b.unique(
            "document_types",
            id.to_string(),
            &format!("document type {id}"),
            &label,
            &format!("{at}/id"),
        );
        let workspace = b.id(&label, &format!("{at}/workspaceId"), &kind.workspace_id);
        b.refer(&label, &format!("{at}/workspaceId"), Target::Workspace(workspace));
        let scope = kind.scope.as_str().to_owned();
        b.plan.file.document_types.insert(id, (workspace, scope.clone()));
        let value = models::DocumentTypeRow { id, workspace_id: workspace, name: kind.name, scope };
        b.plan.document_types.push(Labelled { label, value });
    }
}

fn catalog_families(b: &mut Builder, list: Vec<fixture::CatalogFamily>) {
    for (i, family) in list.into_iter().enumerate() {
        let label = record_label("catalogFamilies", i, Some(&family.id));
        let at = format!("/catalogFamilies/{i}");
        let id = b.id(&label, &format!("{at}/id"), &family.id);
        b.unique(
            "catalog_families",
            id.to_string(),
            &format!("catalog family {id}"),
            &label,
            &format!("{at}/id"),
        );
        let workspace = b.id(&label, &format!("{at}/workspaceId"), &family.workspace_id);
        b.refer(&label, &format!("{at}/workspaceId"), Target::Workspace(workspace));
        let parent = b.opt_id(&label, &format!("{at}/parentFamilyId"), family.parent_family_id.as_deref());
        if let Some(parent) = parent {
            let target = Target::ParentFamily { id: parent, workspace, child_position: i };
            b.refer(&label, &format!("{at}/parentFamilyId"), target);
        }
        b.plan.file.families.insert(id, workspace);
        b.plan.family_positions.entry(id).or_insert(i);
        let mut pair = |name: &str, reference: Option<fixture::VersionedRef>| match reference {
            Some(r) => (Some(b.id(&label, &format!("{at}/{name}/id"), &r.id)), Some(r.version)),
            None => (None, None),
        };
        let (primary_item_id, primary_item_version) = pair("primaryItem", family.primary_item);
        let (primary_family_source_id, primary_family_source_version) =
            pair("primaryFamilySource", family.primary_family_source);
        let (primary_item_source_id, primary_item_source_version) =
            pair("primaryItemSource", family.primary_item_source);
        let value = models::CatalogFamilyRow {
            id,
            workspace_id: workspace,
            parent_family_id: parent,
            name: family.name,
            description: family.description,
            brand: family.brand,
            model_number: family.model_number,
            finish: family.finish,
            material: family.material,
            lead_time: family.lead_time,
            notes: family.notes,
            primary_item_id,
            primary_item_version,
            primary_family_source_id,
            primary_family_source_version,
            primary_item_source_id,
            primary_item_source_version,
            version: family.version,
        };
        b.plan.catalog_families.push(Labelled { label, value });
    }
}

fn project_items(b: &mut Builder, list: Vec<fixture::ProjectItem>) {
    for (i, item) in list.into_iter().enumerate() {
        let label = record_label("projectItems", i, Some(&item.id));
        let at = format!("/projectItems/{i}");
        let id = b.id(&label, &format!("{at}/id"), &item.id);
        b.unique("project_items", id.to_string(), &format!("project item {id}"), &label, &format!("{at}/id"));
        let project = b.id(&label, &format!("{at}/projectId"), &item.project_id);
        let family = b.id(&label, &format!("{at}/familyId"), &item.family_id);
        b.refer(&label, &format!("{at}/projectId"), Target::Project { id: project, workspace: None });
        b.refer(&label, &format!("{at}/familyId"), Target::FamilyOfProject { id: family, project });
        let value = models::ProjectItemRow { id, project_id: project, family_id: family, name: item.name };
        b.plan.project_items.push(Labelled { label, value });
    }
}

fn documents(b: &mut Builder, list: Vec<fixture::Document>) {
    for (i, doc) in list.into_iter().enumerate() {
        let label = record_label("documents", i, Some(&doc.id));
        let at = format!("/documents/{i}");
        let id = b.id(&label, &format!("{at}/id"), &doc.id);
        b.unique("documents", id.to_string(), &format!("document {id}"), &label, &format!("{at}/id"));
        let workspace = b.id(&label, &format!("{at}/workspaceId"), &doc.workspace_id);
        b.refer(&label, &format!("{at}/workspaceId"), Target::Workspace(workspace));
        let project = b.opt_id(&label, &format!("{at}/projectId"), doc.project_id.as_deref());
        if let Some(project) = project {
            b.refer(
                &label,
                &format!("{at}/projectId"),
                Target::Project { id: project, workspace: Some(workspace) },
            );
        }
        let company = b.opt_id(&label, &format!("{at}/companyId"), doc.company_id.as_deref());
        let type_id = b.opt_id(&label, &format!("{at}/typeId"), doc.type_id.as_deref());
        if let Some(type_id) = type_id {
            let target =
                Target::DocumentType { id: type_id, workspace, scope: doc.scope.as_str().to_owned() };
            b.refer(&label, &format!("{at}/typeId"), target);
        }
        let created_by = b.opt_id(&label, &format!("{at}/createdBy"), doc.created_by.as_deref());
        for (j, item) in doc.item_ids.iter().enumerate() {
            b.id(&label, &format!("{at}/itemIds/{j}"), item);
        }
        let value = models::DocumentRow {
            id,
            workspace_id: workspace,
            project_id: project,
            company_id: company,
            scope: doc.scope.as_str().to_owned(),
            type_id,
            source: doc.source.as_str().to_owned(),
            status: doc.status.as_str().to_owned(),
            name: doc.name,
            notes: doc.notes,
            is_confidential: doc.is_confidential,
            phases: b.json(&label, &format!("{at}/phases"), &doc.phases),
            item_ids: b.json(&label, &format!("{at}/itemIds"), &doc.item_ids),
            external_url: doc.external_url,
            original_filename: doc.original_filename,
            mime_type: doc.mime_type,
            size_bytes: doc.size_bytes,
            created_by,
            created_at: b.millis(&label, &format!("{at}/createdAt"), &doc.created_at),
            updated_at: b.millis(&label, &format!("{at}/updatedAt"), &doc.updated_at),
            version: doc.version,
        };
        b.plan.documents.push(Labelled { label, value });
    }
}

fn assistant_imports(b: &mut Builder, list: Vec<fixture::AssistantImport>) {
    for (i, import) in list.into_iter().enumerate() {
        let label = record_label("assistantImports", i, Some(&import.id));
        let at = format!("/assistantImports/{i}");
        let id = b.id(&label, &format!("{at}/id"), &import.id);
        b.unique(
            "assistant_imports",
            id.to_string(),
            &format!("assistant import {id}"),
            &label,
            &format!("{at}/id"),
        );
        let workspace = b.id(&label, &format!("{at}/workspaceId"), &import.workspace_id);
        b.refer(&label, &format!("{at}/workspaceId"), Target::Workspace(workspace));
        let project = b.id(&label, &format!("{at}/target/projectId"), &import.target.project_id);
        b.refer(
            &label,
            &format!("{at}/target/projectId"),
            Target::Project { id: project, workspace: Some(workspace) },
        );
        // Stored as text, and kept as a value to count its issues once the target
        // project's areas are known.
        let takeoff = b.value(&label, &format!("{at}/takeoff"), &import.takeoff);
        let value = models::AssistantImportRow {
            id,
            workspace_id: workspace,
            kind: import.kind.as_str().to_owned(),
            status: import.status.as_str().to_owned(),
            target_kind: import.target.kind.as_str().to_owned(),
            target_project_id: project,
            version: import.version,
            analysis_revision: import.analysis_revision,
            conversation: b.json(&label, &format!("{at}/conversation"), &import.conversation),
            document: b.json(&label, &format!("{at}/document"), &import.document),
            progress: b.json(&label, &format!("{at}/progress"), &import.progress),
            takeoff: takeoff.to_string(),
            source_selection: b.json(&label, &format!("{at}/sourceSelection"), &import.source_selection),
            column_mappings: b.json(&label, &format!("{at}/columnMappings"), &import.column_mappings),
            value_mappings: b.json(&label, &format!("{at}/valueMappings"), &import.value_mappings),
            review_draft: b.json(&label, &format!("{at}/reviewDraft"), &import.review_draft),
            publish_result: b.json(&label, &format!("{at}/publishResult"), &import.publish_result),
            source_snapshot: b.json(&label, &format!("{at}/sourceSnapshot"), &import.source_snapshot),
            blocking_issues: 0,
            warning_issues: 0,
            publishable: true,
            created_at: b.millis(&label, &format!("{at}/createdAt"), &import.created_at),
            updated_at: b.millis(&label, &format!("{at}/updatedAt"), &import.updated_at),
        };
        b.plan.assistant_imports.push(Labelled { label, value });
        b.plan.takeoffs.push(takeoff);
    }
}

fn global_companies(b: &mut Builder, list: Vec<fixture::GlobalCompany>) {
    for (i, company) in list.into_iter().enumerate() {
        let label = record_label("globalCompanies", i, Some(&company.id));
        let at = format!("/globalCompanies/{i}");
        let id = b.id(&label, &format!("{at}/id"), &company.id);
        b.unique(
            "global_companies",
            id.to_string(),
            &format!("global company {id}"),
            &label,
            &format!("{at}/id"),
        );
        let retired_at =
            company.retired_at.as_deref().map(|text| b.millis(&label, &format!("{at}/retiredAt"), text));
        let value = models::GlobalCompanyRow {
            id,
            name: company.name,
            primary_type: company.primary_type,
            legal_name: company.legal_name,
            country: company.country,
            aliases: b.json(&label, &format!("{at}/aliases"), &company.aliases),
            domains: b.json(&label, &format!("{at}/domains"), &company.domains),
            retired_at,
        };
        b.plan.global_companies.push(Labelled { label, value });
    }
}

fn categories(b: &mut Builder, list: Vec<fixture::Category>) {
    for (i, category) in list.into_iter().enumerate() {
        let label = record_label("categories", i, Some(&category.id));
        let at = format!("/categories/{i}");
        let id = b.id(&label, &format!("{at}/id"), &category.id);
        b.unique("categories", id.to_string(), &format!("category {id}"), &label, &format!("{at}/id"));
        let workspace = b.id(&label, &format!("{at}/workspaceId"), &category.workspace_id);
        b.refer(&label, &format!("{at}/workspaceId"), Target::Workspace(workspace));
        if let Some(code) = &category.code {
            b.unique(
                "codes",
                format!("{workspace}/{code}"),
                &format!("code {code}"),
                &label,
                &format!("{at}/code"),
            );
        }
        for (j, kind) in category.product_types.into_iter().enumerate() {
            let pointer = format!("{at}/productTypes/{j}");
            let type_id = b.id(&label, &format!("{pointer}/id"), &kind.id);
            b.unique(
                "product_types",
                type_id.to_string(),
                &format!("product type {type_id}"),
                &label,
                &format!("{pointer}/id"),
            );
            if let Some(code) = &kind.code {
                b.unique(
                    "codes",
                    format!("{workspace}/{code}"),
                    &format!("code {code}"),
                    &label,
                    &format!("{pointer}/code"),
                );
            }
            b.plan.file.product_types.insert(type_id, workspace);
            let type_label = format!("categories[{i}].productTypes[{j}] (id \"{}\")", kind.id);
            let value = models::ProductTypeRow {
                id: type_id,
                workspace_id: workspace,
                category_id: id,
                name: kind.name,
                code: kind.code,
            };
            b.plan.product_types.push(Labelled { label: type_label, value });
        }
        let value = models::CategoryRow {
            id,
            workspace_id: workspace,
            name: category.name,
            code: category.code,
            revision: category.revision,
        };
        b.plan.categories.push(Labelled { label, value });
    }
}

fn item_columns(b: &mut Builder, list: Vec<fixture::ItemColumn>) {
    for (i, column) in list.into_iter().enumerate() {
        let label = record_label("itemColumns", i, Some(&column.id));
        let at = format!("/itemColumns/{i}");
        let id = b.id(&label, &format!("{at}/id"), &column.id);
        b.unique("item_columns", id.to_string(), &format!("item column {id}"), &label, &format!("{at}/id"));
        let workspace = b.id(&label, &format!("{at}/workspaceId"), &column.workspace_id);
        b.refer(&label, &format!("{at}/workspaceId"), Target::Workspace(workspace));
        b.plan.file.item_columns.insert(id, workspace);
        b.plan.item_columns.push(Labelled {
            label,
            value: models::ItemColumnRow { id, workspace_id: workspace, name: column.name },
        });
    }
}

fn product_type_columns(b: &mut Builder, list: Vec<fixture::ProductTypeColumn>) {
    for (i, entry) in list.into_iter().enumerate() {
        let label = record_label("productTypeColumns", i, None);
        let at = format!("/productTypeColumns/{i}");
        let product_type = b.id(&label, &format!("{at}/productTypeId"), &entry.product_type_id);
        let column = b.id(&label, &format!("{at}/itemColumnId"), &entry.item_column_id);
        let key = format!("{product_type}/{column}");
        let shown = format!("product type {product_type} with item column {column}");
        b.unique("product_type_columns", key, &shown, &label, &at);
        b.refer(&label, &format!("{at}/productTypeId"), Target::ProductType(product_type));
        let target = Target::ColumnOfProductType { id: column, product_type };
        b.refer(&label, &format!("{at}/itemColumnId"), target);
        let value = models::ProductTypeColumnRow {
            product_type_id: product_type,
            item_column_id: column,
            is_active: entry.is_active,
        };
        b.plan.product_type_columns.push(Labelled { label, value });
    }
}

fn contact_companies(b: &mut Builder, list: Vec<fixture::ContactCompany>) {
    for (i, company) in list.into_iter().enumerate() {
        let label = record_label("contactCompanies", i, Some(&company.id));
        let at = format!("/contactCompanies/{i}");
        let id = b.id(&label, &format!("{at}/id"), &company.id);
        b.unique(
            "contact_companies",
            id.to_string(),
            &format!("contact company {id}"),
            &label,
            &format!("{at}/id"),
        );
        let workspace = b.id(&label, &format!("{at}/workspaceId"), &company.workspace_id);
        b.refer(&label, &format!("{at}/workspaceId"), Target::Workspace(workspace));
        b.plan.file.companies.insert(id, workspace);
        for (j, person) in company.persons.into_iter().enumerate() {
            let pointer = format!("{at}/persons/{j}/id");
            let person_id = b.id(&label, &pointer, &person.id);
            b.unique(
                "contact_persons",
                person_id.to_string(),
                &format!("contact person {person_id}"),
                &label,
                &pointer,
            );
            b.plan.file.persons.insert(person_id, id);
            let person_label = format!("contactCompanies[{i}].persons[{j}] (id \"{}\")", person.id);
            let value = models::ContactPersonRow {
                id: person_id,
                company_id: id,
                first_name: person.first_name,
                last_name: person.last_name,
                email: person.email,
            };
            b.plan.contact_persons.push(Labelled { label: person_label, value });
        }
        let primary =
            b.opt_id(&label, &format!("{at}/primaryPersonId"), company.primary_person_id.as_deref());
        if let Some(primary) = primary {
            b.refer(&label, &format!("{at}/primaryPersonId"), Target::Person { id: primary, company: id });
        }
        let value = models::ContactCompanyRow {
            id,
            workspace_id: workspace,
            name: company.name,
            tags: b.json(&label, &format!("{at}/tags"), &company.tags),
            status: company.status,
            primary_person_id: primary,
        };
        b.plan.contact_companies.push(Labelled { label, value });
    }
}

fn company_links(b: &mut Builder, list: Vec<fixture::CompanyLink>) {
    for (i, link) in list.into_iter().enumerate() {
        let label = record_label("companyLinks", i, Some(&link.id));
        let at = format!("/companyLinks/{i}");
        let id = b.id(&label, &format!("{at}/id"), &link.id);
        b.unique("company_links", id.to_string(), &format!("company link {id}"), &label, &format!("{at}/id"));
        let workspace = b.id(&label, &format!("{at}/workspaceId"), &link.workspace_id);
        b.refer(&label, &format!("{at}/workspaceId"), Target::Workspace(workspace));
        let main = b.id(&label, &format!("{at}/mainCompanyId"), &link.main_company_id);
        let rep = b.id(&label, &format!("{at}/repCompanyId"), &link.rep_company_id);
        let main_person = b.id(&label, &format!("{at}/mainPersonId"), &link.main_person_id);
        let rep_person = b.id(&label, &format!("{at}/repPersonId"), &link.rep_person_id);
        b.refer(&label, &format!("{at}/mainCompanyId"), Target::Company { id: main, workspace });
        b.refer(&label, &format!("{at}/repCompanyId"), Target::Company { id: rep, workspace });
        b.refer(&label, &format!("{at}/mainPersonId"), Target::Person { id: main_person, company: main });
        b.refer(&label, &format!("{at}/repPersonId"), Target::Person { id: rep_person, company: rep });
        let value = models::CompanyLinkRow {
            id,
            workspace_id: workspace,
            main_company_id: main,
            rep_company_id: rep,
            main_person_id: main_person,
            rep_person_id: rep_person,
            status: link.status.as_str().to_owned(),
            created_at: b.millis(&label, &format!("{at}/createdAt"), &link.created_at),
        };
        b.plan.company_links.push(Labelled { label, value });
    }
}

fn commercial_receipts(b: &mut Builder, list: Vec<fixture::CommercialReceipt>) {
    for (i, receipt) in list.into_iter().enumerate() {
        let label = record_label("commercialReceipts", i, Some(&receipt.id));
        let at = format!("/commercialReceipts/{i}");
        let id = b.id(&label, &format!("{at}/id"), &receipt.id);
        b.unique(
            "commercial_receipts",
            id.to_string(),
            &format!("commercial receipt {id}"),
            &label,
            &format!("{at}/id"),
        );
        let workspace = b.id(&label, &format!("{at}/workspaceId"), &receipt.workspace_id);
        b.refer(&label, &format!("{at}/workspaceId"), Target::Workspace(workspace));
        let project = b.id(&label, &format!("{at}/projectId"), &receipt.project_id);
        b.refer(
            &label,
            &format!("{at}/projectId"),
            Target::Project { id: project, workspace: Some(workspace) },
        );
        let value = models::CommercialReceiptRow {
            id,
            workspace_id: workspace,
            project_id: project,
            project_item_id: b.id(&label, &format!("{at}/projectItemId"), &receipt.project_item_id),
            project_item_name: receipt.project_item_name,
            family_id: b.id(&label, &format!("{at}/familyId"), &receipt.family_id),
            family_name: receipt.family_name,
            primary_image_url: receipt.primary_image_url,
            actor_name: receipt.actor_name,
            outcome: receipt.outcome.as_str().to_owned(),
            fields: b.json(&label, &format!("{at}/fields"), &receipt.fields),
            release: b.json(&label, &format!("{at}/release"), &receipt.release),
            created_at: b.millis(&label, &format!("{at}/createdAt"), &receipt.created_at),
        };
        b.plan.commercial_receipts.push(Labelled { label, value });
    }
}

fn credit_allowances(b: &mut Builder, list: Vec<fixture::CreditAllowance>) {
    for (i, allowance) in list.into_iter().enumerate() {
        let label = record_label("creditAllowances", i, None);
        let at = format!("/creditAllowances/{i}");
        let workspace = b.id(&label, &format!("{at}/workspaceId"), &allowance.workspace_id);
        let user = b.id(&label, &format!("{at}/userId"), &allowance.user_id);
        let key = format!("{workspace}/{user}/{}", allowance.cycle);
        let shown = format!("the allowance of user {user} in workspace {workspace} for {}", allowance.cycle);
        b.unique("credit_allowances", key, &shown, &label, &at);
        b.refer(&label, &format!("{at}/workspaceId"), Target::Workspace(workspace));
        b.refer(&label, &format!("{at}/userId"), Target::User(user));
        let value = models::CreditAllowanceRow {
            workspace_id: workspace,
            user_id: user,
            cycle: allowance.cycle,
            used_credits: allowance.used_credits,
        };
        b.plan.credit_allowances.push(Labelled { label, value });
    }
}

fn time_log_entries(b: &mut Builder, list: Vec<fixture::TimeLogEntry>) {
    for (i, entry) in list.into_iter().enumerate() {
        let label = record_label("timeLogEntries", i, Some(&entry.id));
        let at = format!("/timeLogEntries/{i}");
        let id = b.id(&label, &format!("{at}/id"), &entry.id);
        b.unique(
            "time_log_entries",
            id.to_string(),
            &format!("time-log entry {id}"),
            &label,
            &format!("{at}/id"),
        );
        let workspace = b.id(&label, &format!("{at}/workspaceId"), &entry.workspace_id);
        let user = b.id(&label, &format!("{at}/userId"), &entry.user_id);
        let project = b.id(&label, &format!("{at}/projectId"), &entry.project_id);
        b.refer(&label, &format!("{at}/workspaceId"), Target::Workspace(workspace));
        b.refer(&label, &format!("{at}/userId"), Target::User(user));
        b.refer(
            &label,
            &format!("{at}/projectId"),
            Target::Project { id: project, workspace: Some(workspace) },
        );
        let hours = match crate::repos::time_log::parse_hours(&entry.hours) {
            Some(centi) if centi <= 2400 => centi,
            Some(_) => {
                b.problem(
                    &label,
                    &format!("{at}/hours"),
                    format!("\"{}\" is more than 24 hours", entry.hours),
                );
                0
            }
            None => {
                b.problem(
                    &label,
                    &format!("{at}/hours"),
                    format!("\"{}\" is not a number of hours", entry.hours),
                );
                0
            }
        };
        let cell = (user, project, entry.date.clone(), entry.phase.as_str().to_owned());
        if let Some(first) = b.cells.get(&cell) {
            let message = format!(
                "the cell (user {user}, project {project}, {}, {}) is already written by {first}",
                entry.date, entry.phase
            );
            b.problem(&label, &at, message);
        } else {
            b.cells.insert(cell, label.clone());
        }
        let value = models::TimeLogEntryRow {
            id,
            workspace_id: workspace,
            user_id: user,
            project_id: project,
            entry_date: entry.date,
            phase: entry.phase.as_str().to_owned(),
            hours_centi: hours,
            note: entry.note,
            billable: entry.billable,
            version: entry.version,
            updated_at: b.now,
        };
        b.plan.time_log_entries.push(Labelled { label, value });
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn hours_are_read_into_hundredths() {
        assert_eq!(crate::repos::time_log::parse_hours("7.5"), Some(750));
        assert_eq!(crate::repos::time_log::parse_hours("7.05"), Some(705));
        assert_eq!(crate::repos::time_log::parse_hours("2"), Some(200));
        assert_eq!(crate::repos::time_log::parse_hours("24.00"), Some(2400));
        assert_eq!(crate::repos::time_log::parse_hours("0"), Some(0));
        for bad in ["", ".5", "7.", "123", "7.555", "a", "7,5"] {
            assert_eq!(crate::repos::time_log::parse_hours(bad), None, "{bad:?}");
        }
    }
}
