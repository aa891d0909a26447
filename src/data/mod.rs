//! The in-memory column store: CSV loading with type inference, schemas, and counting by predicate.
