//! The syntax tree a parsed filter or sort turns into. Names are kept as written;
//! what they refer to is decided later, against a schema.

/// A filter expression. `And`/`Or` hold at least two children; a parenthesised
/// group with one member is represented by that member.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Compare(Comparison),
    And(Vec<Expr>),
    Or(Vec<Expr>),
}

/// One `left OP right` comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub left: Operand,
    pub op: CompareOp,
    /// The `?`-prefixed variant: match at least one value of a multi-value operand
    /// instead of all of them.
    pub any: bool,
    pub right: Operand,
    /// Char offset of the operator.
    pub position: usize,
}

/// The sign operators, without their `?` any-prefix (see [`Comparison::any`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareOp {
    Eq,
    Neq,
    Like,
    NotLike,
    Lt,
    Lte,
    Gt,
    Gte,
}

impl CompareOp {
    /// The operator as written, without the any-prefix.
    pub fn as_str(self) -> &'static str {
        match self {
            CompareOp::Eq => "=",
            CompareOp::Neq => "!=",
            CompareOp::Like => "~",
            CompareOp::NotLike => "!~",
            CompareOp::Lt => "<",
            CompareOp::Lte => "<=",
            CompareOp::Gt => ">",
            CompareOp::Gte => ">=",
        }
    }
}

/// One side of a comparison, or a function argument.
#[derive(Debug, Clone, PartialEq)]
pub struct Operand {
    pub kind: OperandKind,
    /// Char offset of the operand's first char.
    pub position: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub enum OperandKind {
    /// A field path, macro or keyword: `title`, `list.name`, `tags:each`, `@now`,
    /// `@request.auth.id`, `null`.
    Identifier(String),
    /// A quoted text with its escapes already removed.
    Text(String),
    /// A number literal (PocketBase binds every number as a float).
    Number(f64),
    /// `name(arg, ...)`, such as `geoDistance(...)` or `strftime(...)`.
    Function { name: String, args: Vec<Operand> },
}

/// One key of a sort.
#[derive(Debug, Clone, PartialEq)]
pub struct SortKey {
    pub target: SortTarget,
    pub descending: bool,
    /// Char offset of the key's name in the sort input.
    pub position: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub enum SortTarget {
    /// `@random`
    Random,
    /// `@rowid`: insertion order.
    Rowid,
    /// A field path such as `title` or `list.name`.
    Field(String),
}
