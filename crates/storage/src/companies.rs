//! Placeholder: implemented with its operation.
