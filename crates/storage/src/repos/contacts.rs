//! Contact companies, their persons, and the links between companies (`createCompanyLink`).
//!
//! Creating a link names a main company and a representing company of the workspace and,
//! optionally, a contact person of each; a person left out defaults to that company's
//! primary person. Rules, in order (each step lists every violation it finds):
//! 1. 422 `unknown_company` (`/mainCompanyId`, `/repCompanyId`): no such company in the
//!    workspace (an id that cannot name a record included); 422 `unknown_person`
//!    (`/mainPersonId`, `/repPersonId`): no such person in the workspace, or the person was
//!    left out and the company has no primary person;
//! 2. 422 `person_not_in_company`: a person named for one company belongs to another;
//! 3. 422 `self_link` (`/repCompanyId`): both companies are the same;
//! 4. 409 `link_exists`: a link that is not `terminated` already joins the two companies,
//!    in either direction (the pair is unordered: 61→63 and 63→61 are the same pair).
//!
//! New links are `active`, created now. The check and the insert run in one write
//! transaction; on PostgreSQL the two company rows are also locked (`FOR UPDATE`, in id
//! order) first, so two concurrent creates for the same pair cannot both pass the check
//! (SQLite's `BEGIN IMMEDIATE` already serialises writers).

use crate::clock::{format_millis, now_millis};
use crate::db_write;
use crate::engine::DbConn;
use crate::engine::Write;
use crate::error::{Refusal, RuleViolation, StateConflict, StoreError};
use crate::ids::{self, SentId};
use crate::models::{ContactCompanyRow, ContactPersonRow};
use crate::repos::locks::RowLocks;
use crate::schema::{company_links, contact_companies, contact_persons};
use diesel::prelude::*;
use std::collections::HashMap;
use wpds_contract::types::{CompanyLink, CompanyLinkStatus, CompanySummary, PersonSummary};

/// A link to create, as the request names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewCompanyLink {
    /// The workspace of the path.
    pub workspace_id: i64,
    /// The main company.
    pub main_company_id: SentId,
    /// The representing company.
    pub rep_company_id: SentId,
    /// The main company's contact person; `None` for its primary person.
    pub main_person_id: Option<SentId>,
    /// The representing company's contact person; `None` for its primary person.
    pub rep_person_id: Option<SentId>,
}

/// One side of the link (main or representing) as the request names it.
struct Side<'a> {
    company_pointer: &'static str,
    person_pointer: &'static str,
    company: &'a SentId,
    person: Option<&'a SentId>,
    company_id: Option<i64>,
    person_id: Option<i64>,
}

impl<'a> Side<'a> {
    /// The side whose fields sit at `pointers` (company, person).
    fn new(pointers: (&'static str, &'static str), company: &'a SentId, person: Option<&'a SentId>) -> Self {
        Side {
            company_pointer: pointers.0,
            person_pointer: pointers.1,
            company,
            person,
            company_id: company.record(),
            person_id: person.and_then(SentId::record),
        }
    }
}

/// What one side resolved to once every rule passed.
struct Resolved<'r> {
    company: &'r ContactCompanyRow,
    person: &'r ContactPersonRow,
}

fn person_summary(row: &ContactPersonRow) -> PersonSummary {
    PersonSummary {
        id: ids::show(row.id),
        first_name: row.first_name.clone(),
        last_name: row.last_name.clone(),
        email: row.email.clone(),
    }
}

/// The company's summary. `primaryPerson` is required by the contract; for a company
/// that has no primary person it shows the person who stands for the company in this
/// link instead.
fn company_summary(
    company: &ContactCompanyRow,
    link_person: &ContactPersonRow,
    persons: &HashMap<i64, ContactPersonRow>,
) -> Result<CompanySummary, StoreError> {
    let id = company.id;
    let tags: Vec<String> = serde_json::from_str(&company.tags)
        .map_err(|e| StoreError::Internal(format!("contact company {id}: bad stored tags: {e}")))?;
    let primary = company.primary_person_id.and_then(|p| persons.get(&p)).unwrap_or(link_person);
    Ok(CompanySummary {
        id: ids::show(id),
        name: company.name.clone(),
        tags,
        status: company.status.clone(),
        primary_person: person_summary(primary),
    })
}

/// The violations of step 1, kept apart so that they are listed in the body's order
/// (both companies, then both persons).
#[derive(Default)]
struct Unknown {
    companies: Vec<RuleViolation>,
    persons: Vec<RuleViolation>,
}

/// Checks the rules of `side` that step 1 covers and, where they pass, the person it
/// resolves to (named or defaulted).
fn resolve_person<'r>(
    side: &Side<'_>,
    companies: &'r HashMap<i64, ContactCompanyRow>,
    persons: &'r HashMap<i64, ContactPersonRow>,
    unknown: &mut Unknown,
) -> Option<Resolved<'r>> {
    let company = side.company_id.and_then(|id| companies.get(&id));
    if company.is_none() {
        unknown.companies.push(RuleViolation::new(
            "unknown_company",
            side.company_pointer,
            format!("company {} is not in this workspace", side.company),
        ));
    }
    let person = match side.person {
        Some(text) => {
            let found = side.person_id.and_then(|id| persons.get(&id));
            if found.is_none() {
                unknown.persons.push(RuleViolation::new(
                    "unknown_person",
                    side.person_pointer,
                    format!("person {text} is not in this workspace"),
                ));
            }
            found
        }
        None => {
            let company = company?;
            let primary = company
                .primary_person_id
                .and_then(|id| persons.get(&id))
                .filter(|p| p.company_id == company.id);
            if primary.is_none() {
                unknown.persons.push(RuleViolation::new(
                    "unknown_person",
                    side.person_pointer,
                    format!("company {} has no primary person; name one", side.company),
                ));
            }
            primary
        }
    };
    Some(Resolved { company: company?, person: person? })
}

/// Creates a company link (`createCompanyLink`); see the module documentation for the rules.
pub fn create_link(new: NewCompanyLink) -> Write<CompanyLink> {
    Write::new("SELECT contact_companies contact_persons company_links INSERT company_links", move |conn| {
        create_link_on(conn, new)
    })
}

/// [`create_link`] on `conn`.
fn create_link_on(conn: &mut DbConn, new: NewCompanyLink) -> Result<CompanyLink, StoreError> {
    let main =
        Side::new(("/mainCompanyId", "/mainPersonId"), &new.main_company_id, new.main_person_id.as_ref());
    let rep = Side::new(("/repCompanyId", "/repPersonId"), &new.rep_company_id, new.rep_person_id.as_ref());
    let mut company_ids: Vec<i64> = [main.company_id, rep.company_id].into_iter().flatten().collect();
    company_ids.sort_unstable();
    company_ids.dedup();
    let workspace_id = new.workspace_id;
    db_write!(conn => {
        conn.lock_companies(&company_ids)?;
        let companies: HashMap<i64, ContactCompanyRow> = contact_companies::table
            .filter(contact_companies::id.eq_any(&company_ids))
            .filter(contact_companies::workspace_id.eq(workspace_id))
            .select(ContactCompanyRow::as_select())
            .load::<ContactCompanyRow>(conn)?
            .into_iter()
            .map(|row| (row.id, row))
            .collect();
        // The named persons and the primary persons of both companies, in one query.
        let person_ids: Vec<i64> = [main.person_id, rep.person_id]
            .into_iter()
            .flatten()
            .chain(companies.values().filter_map(|c| c.primary_person_id))
            .collect();
        let persons: HashMap<i64, ContactPersonRow> = contact_persons::table
            .inner_join(contact_companies::table)
            .filter(contact_persons::id.eq_any(&person_ids))
            .filter(contact_companies::workspace_id.eq(workspace_id))
            .select(ContactPersonRow::as_select())
            .load::<ContactPersonRow>(conn)?
            .into_iter()
            .map(|row| (row.id, row))
            .collect();

        let mut unknown = Unknown::default();
        let main_side = resolve_person(&main, &companies, &persons, &mut unknown);
        let rep_side = resolve_person(&rep, &companies, &persons, &mut unknown);
        let unknown: Vec<RuleViolation> = unknown.companies.into_iter().chain(unknown.persons).collect();
        let (Some(main_side), Some(rep_side)) = (main_side, rep_side) else {
            return Err(StoreError::Rule(unknown));
        };
        if !unknown.is_empty() {
            return Err(StoreError::Rule(unknown));
        }

        let strangers: Vec<RuleViolation> = [(&main, &main_side), (&rep, &rep_side)]
            .into_iter()
            .filter(|(_, resolved)| resolved.person.company_id != resolved.company.id)
            .map(|(side, resolved)| {
                RuleViolation::new(
                    "person_not_in_company",
                    side.person_pointer,
                    format!(
                        "person {} belongs to company {}, not to {}",
                        resolved.person.id, resolved.person.company_id, resolved.company.id
                    ),
                )
            })
            .collect();
        if !strangers.is_empty() {
            return Err(StoreError::Rule(strangers));
        }

        let (main_id, rep_id) = (main_side.company.id, rep_side.company.id);
        if main_id == rep_id {
            return Err(StoreError::rule("self_link", "/repCompanyId", "same company as mainCompanyId"));
        }

        let existing: Option<i64> = company_links::table
            .filter(company_links::workspace_id.eq(workspace_id))
            .filter(company_links::status.ne(CompanyLinkStatus::Terminated.as_str()))
            .filter(
                company_links::main_company_id
                    .eq(main_id)
                    .and(company_links::rep_company_id.eq(rep_id))
                    .or(company_links::main_company_id.eq(rep_id).and(company_links::rep_company_id.eq(main_id))),
            )
            .select(company_links::id)
            .first(conn)
            .optional()?;
        if let Some(link) = existing {
            return Err(StoreError::State(Box::new(StateConflict {
                refusal: Refusal::LinkExists,
                detail: format!("Companies {main_id} and {rep_id} are linked already (link {link})."),
                current: None,
                violations: Vec::new(),
            })));
        }

        let created_at = now_millis();
        let id: i64 = diesel::insert_into(company_links::table)
            .values((
                company_links::workspace_id.eq(workspace_id),
                company_links::main_company_id.eq(main_id),
                company_links::rep_company_id.eq(rep_id),
                company_links::main_person_id.eq(main_side.person.id),
                company_links::rep_person_id.eq(rep_side.person.id),
                company_links::status.eq(CompanyLinkStatus::Active.as_str()),
                company_links::created_at.eq(created_at),
            ))
            .returning(company_links::id)
            .get_result(conn)?;
        Ok(CompanyLink {
            id: ids::show(id),
            status: CompanyLinkStatus::Active,
            main_company: company_summary(main_side.company, main_side.person, &persons)?,
            rep_company: company_summary(rep_side.company, rep_side.person, &persons)?,
            main_person: person_summary(main_side.person),
            rep_person: person_summary(rep_side.person),
            created_at: format_millis(created_at),
        })
    })
}
