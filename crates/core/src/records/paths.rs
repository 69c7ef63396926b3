//! The entities a filter or sort reaches through its field paths: `list.name`
//! on cards reaches lists, `cards_via_list.title` on lists reaches cards. A
//! grant may filter and sort only through entities it may read, or a query
//! would answer yes or no about values it may not see.

use crate::app::App;
use a2app_access::caller::Caller;
use a2app_definition::error::Error;
use a2app_filter::{Expr, Operand, OperandKind, SortKey, SortTarget};
use protocol::grant::Scope;

/// `insufficient_scope` for the first entity beyond `entity` that a path of
/// `filter` or `sort` passes through and the caller may not read. Callers
/// without a grant pass: their reach is the rules' business.
pub fn readable(
    app: &App,
    caller: &Caller,
    entity: &str,
    filter: Option<&Expr>,
    sort: &[SortKey],
) -> Result<(), Error> {
    if caller.grant.is_none() {
        return Ok(());
    }
    let mut idents = Vec::new();
    if let Some(expr) = filter {
        identifiers(expr, &mut idents);
    }
    idents.extend(sort.iter().filter_map(|key| match &key.target {
        SortTarget::Field(path) => Some(path.as_str()),
        SortTarget::Random | SortTarget::Rowid => None,
    }));
    for ident in idents.into_iter().filter(|i| !i.starts_with('@')) {
        let segments: Vec<&str> = ident.split('.').collect();
        let mut current = entity.to_owned();
        for segment in &segments[..segments.len().saturating_sub(1)] {
            let name = segment.split(':').next().unwrap_or(segment);
            // A field first, as the query compiler resolves it: a field may
            // itself be named like a back-relation.
            let field = app.definition.schema.entities.get(&current).and_then(|e| e.fields.get(name));
            let next = match field {
                Some(f) => f.kind.target().map(str::to_owned),
                None => name.rsplit_once("_via_").map(|(back, _)| back.to_owned()),
            };
            // Not a relation: a path inside a JSON value, still this entity.
            let Some(next) = next else { break };
            caller.require(Scope::Read(next.clone()))?;
            current = next;
        }
    }
    Ok(())
}

fn identifiers<'a>(expr: &'a Expr, out: &mut Vec<&'a str>) {
    match expr {
        Expr::Compare(c) => {
            operand(&c.left, out);
            operand(&c.right, out);
        }
        Expr::And(all) | Expr::Or(all) => all.iter().for_each(|e| identifiers(e, out)),
    }
}

fn operand<'a>(o: &'a Operand, out: &mut Vec<&'a str>) {
    match &o.kind {
        OperandKind::Identifier(path) => out.push(path),
        OperandKind::Function { args, .. } => args.iter().for_each(|a| operand(a, out)),
        OperandKind::Text(_) | OperandKind::Number(_) => {}
    }
}
