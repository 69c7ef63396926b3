//! PLACEHOLDER until the filter branch lands.

use crate::filter::{Expr, FilterError, SortKey};
use protocol::schema::Schema;
use serde_json::{Map, Value};

#[derive(Debug, Clone, Default)]
pub struct RequestInfo {
    pub auth: Option<Map<String, Value>>,
    pub method: String,
    pub headers: Map<String, Value>,
    pub query: Map<String, Value>,
    pub body: Option<Map<String, Value>>,
    pub context: String,
}

#[derive(Debug, Clone)]
pub struct QueryContext {
    pub now: jiff::Timestamp,
    pub request: RequestInfo,
}

#[derive(Debug, Clone, Default)]
pub struct SqlFragment {
    pub sql: String,
    pub params: Vec<rusqlite::types::Value>,
}

pub fn compile_filter(
    _schema: &Schema,
    _entity: &str,
    _expr: &Expr,
    _ctx: &QueryContext,
) -> Result<SqlFragment, FilterError> {
    Ok(SqlFragment { sql: "1".into(), params: Vec::new() })
}

pub fn compile_sort(
    _schema: &Schema,
    _entity: &str,
    _keys: &[SortKey],
    _ctx: &QueryContext,
) -> Result<SqlFragment, FilterError> {
    Ok(SqlFragment::default())
}
