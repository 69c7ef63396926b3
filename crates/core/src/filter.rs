//! PLACEHOLDER until the filter branch lands: the parser interface only.

#[derive(Debug, Clone, PartialEq)]
pub struct FilterError {
    pub message: String,
    pub position: usize,
}

impl std::fmt::Display for FilterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (at position {})", self.message, self.position)
    }
}

impl std::error::Error for FilterError {}

#[derive(Debug, Clone, PartialEq)]
pub struct Expr;

#[derive(Debug, Clone, PartialEq)]
pub struct SortKey;

pub fn parse(input: &str) -> Result<Expr, FilterError> {
    if input.trim().is_empty() {
        return Err(FilterError { message: "empty filter".into(), position: 0 });
    }
    Ok(Expr)
}

pub fn parse_sort(_input: &str) -> Result<Vec<SortKey>, FilterError> {
    Ok(Vec::new())
}
