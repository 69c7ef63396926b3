//! Compiles a parsed filter and sort against the schema into parameterized SQLite SQL.
