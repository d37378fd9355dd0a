//! Placeholder: tests land with the operation.
