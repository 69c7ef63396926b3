//! PocketBase's filter grammar (fexpr): lexer, parser and syntax tree.
//! Owned by the filter work; see `filter/`.
