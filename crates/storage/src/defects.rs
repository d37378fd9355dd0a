//! Defects seeded on purpose, so that the soak's checker is shown to catch what it is for
//! (`scripts/cluster --defects`, run by CI): each breaks one promise a verdict of the checker
//! stands for, in the code that keeps it.
//!
//! Built into test builds only: the code exists where `debug_assertions` is on (the dev and
//! ci profiles) and is compiled out of a release build, where [`seeded`] is always
//! `Ok(None)`. In a test build, a defect is on only when the environment names it:
//! `WPDS_SEEDED_DEFECT=lost-update` (or `duplicate-export`, `wrong-409-version`); the server
//! logs it at start and refuses a name it does not know.

/// A defect [`seeded`] into this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Defect {
    /// A time-log write whose expected version is older than the cell's succeeds (its
    /// statement checks `version >=` instead of `=`); PostgreSQL's batched statement is left
    /// out so every write meets it. The checker's verdict: lost updates.
    LostUpdate,
    /// An export's request key is never found again and each request stores its own: a retry
    /// makes a second export. The checker's verdict: exports made twice.
    DuplicateExport,
    /// A time-log write's 409 names a version one past the cell's. The checker's verdict: 409s
    /// naming a version the cell did not hold.
    Wrong409Version,
}

impl Defect {
    /// Each defect's name, as `WPDS_SEEDED_DEFECT` gives it.
    #[cfg(debug_assertions)]
    const NAMES: [(&'static str, Defect); 3] = [
        ("lost-update", Defect::LostUpdate),
        ("duplicate-export", Defect::DuplicateExport),
        ("wrong-409-version", Defect::Wrong409Version),
    ];
}

/// The environment variable that names the defect to seed (test builds only).
pub const VARIABLE: &str = "WPDS_SEEDED_DEFECT";

/// The defect this process runs with, named by `WPDS_SEEDED_DEFECT` in a test build: `None`
/// when it is unset or empty, and always in a release build; an error naming the known
/// defects when it names none of them.
pub fn seeded() -> Result<Option<Defect>, String> {
    #[cfg(debug_assertions)]
    {
        static SEEDED: std::sync::OnceLock<Result<Option<Defect>, String>> = std::sync::OnceLock::new();
        SEEDED
            .get_or_init(|| {
                let name = std::env::var(VARIABLE).unwrap_or_default();
                if name.is_empty() {
                    return Ok(None);
                }
                Defect::NAMES
                    .iter()
                    .find(|(known, _)| *known == name)
                    .map(|(_, defect)| Some(*defect))
                    .ok_or_else(|| {
                        let known: Vec<&str> = Defect::NAMES.iter().map(|(known, _)| *known).collect();
                        format!("{VARIABLE}={name:?} names no seeded defect (known: {})", known.join(", "))
                    })
            })
            .clone()
    }
    #[cfg(not(debug_assertions))]
    {
        Ok(None)
    }
}

/// Whether `defect` is seeded into this process (never in a release build).
pub(crate) fn on(defect: Defect) -> bool {
    cfg!(debug_assertions) && seeded() == Ok(Some(defect))
}
