//! Builds the syntax tree from tokens. The grammar is fexpr's:
//! `list := item (JOIN item)*`, `item := "(" list ")" | operand SIGN operand`, with
//! operands on either side. fexpr returns a flat list that PocketBase pastes into SQL,
//! so SQL precedence decides the meaning: we group `&&` tighter than `||` here.

use super::lexer::{Token, TokenKind, is_valid_sort_name};
use super::syntax::{Comparison, Expr, Operand, OperandKind, SortKey, SortTarget};
use super::{FilterError, MAX_COMPARISONS, MAX_SORT_KEY_CHARS, MAX_SORT_KEYS};

/// Deeper nesting than this is refused: it keeps recursion (here and in the
/// compiler, and in SQLite's own parser) bounded. PocketBase has no such limit, but
/// its 3,500-char cap makes a real filter this deep implausible.
const MAX_GROUP_DEPTH: usize = 64;
/// fexpr allows functions nested three deep (`f(g(h(x)))`).
const MAX_FUNCTION_DEPTH: usize = 3;

pub(super) fn parse_tokens(tokens: &[Token], input_chars: usize) -> Result<Expr, FilterError> {
    if tokens.is_empty() {
        return Err(FilterError::new("empty filter: expected an expression such as title = 'x'", 0));
    }
    let mut parser = Parser { tokens, pos: 0, comparisons: 0, input_chars };
    let expr = parser.list(0)?;
    match parser.peek() {
        None => Ok(expr),
        Some(t) if t.kind == TokenKind::CloseParen => {
            Err(FilterError::new("unexpected ')' without a matching '('", t.start))
        }
        Some(t) => Err(FilterError::new(format!("expected && or ||, got {}", describe(&t.kind)), t.start)),
    }
}

struct Parser<'a> {
    tokens: &'a [Token],
    pos: usize,
    comparisons: usize,
    input_chars: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn next(&mut self) -> Option<&Token> {
        let t = self.tokens.get(self.pos);
        self.pos += 1;
        t
    }

    /// Items joined by `&&`/`||`, grouped as SQL would: an OR of ANDs.
    fn list(&mut self, depth: usize) -> Result<Expr, FilterError> {
        let mut ors: Vec<Expr> = Vec::new();
        let mut ands: Vec<Expr> = vec![self.item(depth, None)?];
        // fexpr quirk, kept for compatibility: a group right after an item needs no
        // join and takes the last one written (`&&` before any): `(a) (b)` is
        // `(a) && (b)`, and `a || (b) (c)` is `a || (b) || (c)`.
        let mut last_is_and = true;
        loop {
            let (is_and, join) = match self.peek() {
                Some(t) if t.kind == TokenKind::And => (true, t.clone()),
                Some(t) if t.kind == TokenKind::Or => (false, t.clone()),
                Some(t) if t.kind == TokenKind::OpenParen => {
                    let item = self.item(depth, None)?;
                    if !last_is_and {
                        ors.push(collapse(std::mem::take(&mut ands), Expr::And));
                    }
                    ands.push(item);
                    continue;
                }
                _ => break,
            };
            last_is_and = is_and;
            self.pos += 1;
            let item = self.item(depth, Some(&join))?;
            if !is_and {
                ors.push(collapse(std::mem::take(&mut ands), Expr::And));
            }
            ands.push(item);
        }
        ors.push(collapse(ands, Expr::And));
        Ok(collapse(ors, Expr::Or))
    }

    /// A parenthesised group or a comparison. `after` is the join before it, if any,
    /// so that a trailing join can be reported where it is.
    fn item(&mut self, depth: usize, after: Option<&Token>) -> Result<Expr, FilterError> {
        let Some(token) = self.peek().cloned() else {
            return Err(match after {
                Some(join) => FilterError::new(
                    format!("incomplete filter: expected an expression after {}", describe(&join.kind)),
                    join.start,
                ),
                None => FilterError::new("incomplete filter: expected an expression", self.input_chars),
            });
        };
        if token.kind != TokenKind::OpenParen {
            return self.comparison().map(Expr::Compare);
        }
        self.pos += 1;
        if depth >= MAX_GROUP_DEPTH {
            return Err(FilterError::new(
                format!("groups are nested too deeply (at most {MAX_GROUP_DEPTH} levels)"),
                token.start,
            ));
        }
        if let Some(t) = self.peek()
            && t.kind == TokenKind::CloseParen
        {
            return Err(FilterError::new("empty group: expected an expression between ( and )", token.start));
        }
        let inner = self.list(depth + 1)?;
        match self.next() {
            Some(t) if t.kind == TokenKind::CloseParen => Ok(inner),
            Some(t) => Err(FilterError::new(format!("expected && or || or ), got {}", describe(&t.kind)), t.start)),
            None => Err(FilterError::new("missing ) for the ( opened here", token.start)),
        }
    }

    fn comparison(&mut self) -> Result<Comparison, FilterError> {
        let left = self.operand("left operand", 0)?;
        let (op, any, position) = match self.next() {
            Some(Token { kind: TokenKind::Sign { op, any }, start, .. }) => (*op, *any, *start),
            Some(t) => {
                return Err(FilterError::new(
                    format!("expected an operator (= != > >= < <= ~ !~ or a ?-variant), got {}", describe(&t.kind)),
                    t.start,
                ));
            }
            None => {
                return Err(FilterError::new(
                    "incomplete comparison: expected an operator (= != > >= < <= ~ !~) and a right operand",
                    self.input_chars,
                ));
            }
        };
        let right = self.operand("right operand", 0)?;
        self.comparisons += 1;
        if self.comparisons > MAX_COMPARISONS {
            return Err(FilterError::new(
                format!("too many comparisons: at most {MAX_COMPARISONS} are allowed in one filter"),
                left.position,
            ));
        }
        Ok(Comparison { left, op, any, right, position })
    }

    fn operand(&mut self, what: &str, function_depth: usize) -> Result<Operand, FilterError> {
        let Some(token) = self.next().cloned() else {
            return Err(FilterError::new(
                format!("incomplete comparison: expected a {what} (field, text or number)"),
                self.input_chars,
            ));
        };
        let position = token.start;
        let kind = match token.kind {
            TokenKind::Text(s) => OperandKind::Text(s),
            TokenKind::Number(n) => OperandKind::Number(n),
            TokenKind::Identifier(name) => match self.peek() {
                // An identifier directly followed by `(` is a function call.
                Some(t) if t.kind == TokenKind::OpenParen && t.start == token.end => {
                    self.pos += 1;
                    let args = self.arguments(&name, position, function_depth + 1)?;
                    OperandKind::Function { name, args }
                }
                _ => OperandKind::Identifier(name),
            },
            other => {
                return Err(FilterError::new(
                    format!("expected a {what} (field, text or number), got {}", describe(&other)),
                    position,
                ));
            }
        };
        Ok(Operand { kind, position })
    }

    /// Function arguments after the `(`: comma separated, one trailing comma allowed.
    fn arguments(&mut self, name: &str, position: usize, depth: usize) -> Result<Vec<Operand>, FilterError> {
        if depth > MAX_FUNCTION_DEPTH {
            return Err(FilterError::new(
                format!("functions are nested too deeply in {name}(...) (at most {MAX_FUNCTION_DEPTH} levels)"),
                position,
            ));
        }
        let mut args = Vec::new();
        loop {
            match self.peek() {
                Some(t) if t.kind == TokenKind::CloseParen => {
                    self.pos += 1;
                    return Ok(args);
                }
                None => return Err(FilterError::new(format!("missing ) to close {name}("), position)),
                _ => {}
            }
            args.push(self.operand("function argument", depth)?);
            match self.next() {
                Some(t) if t.kind == TokenKind::Comma => {}
                Some(t) if t.kind == TokenKind::CloseParen => return Ok(args),
                Some(t) => {
                    return Err(FilterError::new(
                        format!("expected , or ) in the arguments of {name}(...), got {}", describe(&t.kind)),
                        t.start,
                    ));
                }
                None => return Err(FilterError::new(format!("missing ) to close {name}("), position)),
            }
        }
    }
}

fn collapse(mut items: Vec<Expr>, make: fn(Vec<Expr>) -> Expr) -> Expr {
    if items.len() == 1
        && let Some(only) = items.pop()
    {
        return only;
    }
    make(items)
}

fn describe(kind: &TokenKind) -> String {
    match kind {
        TokenKind::Identifier(s) => format!("identifier {s:?}"),
        TokenKind::Number(n) => format!("number {n}"),
        TokenKind::Text(s) => format!("text {s:?}"),
        TokenKind::Sign { op, any } => format!("operator \"{}{}\"", if *any { "?" } else { "" }, op.as_str()),
        TokenKind::And => "\"&&\"".to_string(),
        TokenKind::Or => "\"||\"".to_string(),
        TokenKind::OpenParen => "\"(\"".to_string(),
        TokenKind::CloseParen => "\")\"".to_string(),
        TokenKind::Comma => "\",\"".to_string(),
    }
}

pub(super) fn parse_sort(input: &str) -> Result<Vec<SortKey>, FilterError> {
    if input.trim().is_empty() {
        return Ok(Vec::new());
    }
    let mut keys = Vec::new();
    let mut offset = 0;
    for piece in input.split(',') {
        let piece_start = offset;
        offset += piece.chars().count() + 1;
        let leading = piece.chars().take_while(|c| c.is_whitespace()).count();
        let trimmed = piece.trim();
        let position = piece_start + leading;
        if keys.len() == MAX_SORT_KEYS {
            return Err(FilterError::new(format!("too many sort keys: at most {MAX_SORT_KEYS} are allowed"), position));
        }
        if trimmed.chars().count() > MAX_SORT_KEY_CHARS {
            return Err(FilterError::new(
                format!("sort key is too long: at most {MAX_SORT_KEY_CHARS} chars are allowed"),
                position,
            ));
        }
        let (descending, name, name_position) = if let Some(rest) = trimmed.strip_prefix('-') {
            (true, rest, position + 1)
        } else if let Some(rest) = trimmed.strip_prefix('+') {
            (false, rest, position + 1)
        } else {
            (false, trimmed, position)
        };
        let target = match name {
            "" => return Err(FilterError::new("empty sort key: expected a field name such as -created", position)),
            "@random" => SortTarget::Random,
            "@rowid" => SortTarget::Rowid,
            _ if is_valid_sort_name(name) => SortTarget::Field(name.to_string()),
            _ => {
                return Err(FilterError::new(
                    format!(
                        "invalid sort key {name:?}: expected a field path such as title or list.name, @random or @rowid"
                    ),
                    name_position,
                ));
            }
        };
        keys.push(SortKey { target, descending, position: name_position });
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::super::syntax::CompareOp;
    use super::super::{parse, parse_sort};
    use super::*;

    /// A compact rendering of the tree, so expectations fit on one line.
    fn show(expr: &Expr) -> String {
        match expr {
            Expr::Compare(c) => {
                format!("{}{}{}{}", operand(&c.left), if c.any { "?" } else { "" }, c.op.as_str(), operand(&c.right))
            }
            Expr::And(items) => format!("and({})", items.iter().map(show).collect::<Vec<_>>().join(", ")),
            Expr::Or(items) => format!("or({})", items.iter().map(show).collect::<Vec<_>>().join(", ")),
        }
    }

    fn operand(o: &Operand) -> String {
        match &o.kind {
            OperandKind::Identifier(s) => s.clone(),
            OperandKind::Text(s) => format!("{s:?}"),
            OperandKind::Number(n) => format!("{n}"),
            OperandKind::Function { name, args } => {
                format!("{name}({})", args.iter().map(operand).collect::<Vec<_>>().join(","))
            }
        }
    }

    #[test]
    fn trees() {
        let cases = [
            ("a = 1", "a=1"),
            ("'x' = title", "\"x\"=title"),
            ("a ?!= b", "a?!=b"),
            ("a=1 && b=2", "and(a=1, b=2)"),
            ("a=1 || b=2 && c=3", "or(a=1, and(b=2, c=3))"),
            ("a=1 && b=2 || c=3", "or(and(a=1, b=2), c=3)"),
            ("a=1 && (b=2 || c=3)", "and(a=1, or(b=2, c=3))"),
            ("((a=1))", "a=1"),
            ("(a=1 && b=2) && c=3", "and(and(a=1, b=2), c=3)"),
            ("a=1 || b=2 || c=3", "or(a=1, b=2, c=3)"),
            ("a=1 // first\n && b = 'x' // second", "and(a=1, b=\"x\")"),
            ("f(a, 'x', 1,) > 2", "f(a,\"x\",1)>2"),
            ("f() = g(h(x))", "f()=g(h(x))"),
            ("geoDistance(a.lon, a.lat, 1, -2.5) < 25", "geoDistance(a.lon,a.lat,1,-2.5)<25"),
            // fexpr accepts a group right after an item, joined by the last join.
            ("(a=1) (b=2)", "and(a=1, b=2)"),
            ("a=1 (b=2)", "and(a=1, b=2)"),
            ("a=1 || (b=2) (c=3)", "or(a=1, b=2, c=3)"),
            ("a=1 || b=2 && (c=3) (d=4)", "or(a=1, and(b=2, c=3, d=4))"),
        ];
        for (input, expected) in cases {
            let expr = parse(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
            assert_eq!(show(&expr), expected, "input {input:?}");
        }
    }

    #[test]
    fn comparison_positions() {
        let Ok(Expr::And(items)) = parse("a = 1 && 'x' ?~ b") else { panic!("expected and") };
        let Expr::Compare(c) = &items[1] else { panic!("expected comparison") };
        assert_eq!((c.left.position, c.position, c.right.position), (9, 13, 16));
        assert_eq!(c.op, CompareOp::Like);
        assert!(c.any);
    }

    #[test]
    fn errors() {
        let long = format!("a = '{}'", "x".repeat(3500));
        let many = vec!["a = 1"; 201].join(" && ");
        let deep = format!("{}a = 1{}", "(".repeat(70), ")".repeat(70));
        let cases: Vec<(&str, usize, &str)> = vec![
            ("", 0, "empty filter"),
            ("   // nothing", 0, "empty filter"),
            ("a = 1 &&", 6, "expected an expression after \"&&\""),
            ("a = 1 ||  ", 6, "expected an expression after \"||\""),
            ("a = 1 && ()", 9, "empty group"),
            ("()", 0, "empty group"),
            ("(a = 1", 0, "missing ) for the ( opened here"),
            ("a = 1)", 5, "unexpected ')'"),
            ("a = 1 b = 2", 6, "expected && or ||, got identifier \"b\""),
            ("a", 1, "incomplete comparison"),
            ("a =", 3, "incomplete comparison: expected a right operand"),
            ("a b", 2, "expected an operator"),
            ("= 1", 0, "expected a left operand"),
            ("a = && b = 1", 4, "expected a right operand"),
            ("a = (b)", 4, "expected a right operand"),
            ("(a = 1 b)", 7, "expected && or || or ), got identifier"),
            ("(a = 1) b = 2", 8, "expected && or ||, got identifier \"b\""),
            ("a = (b = 1) 1", 4, "expected a right operand"),
            ("f(a b) = 1", 4, "expected , or )"),
            ("f(a = 1", 4, "expected , or )"),
            ("f(a,", 0, "missing ) to close f("),
            ("f(g(h(i(x)))) = 1", 6, "nested too deeply"),
            ("a = 'x", 4, "unterminated text"),
            (&long, 3500, "filter is too long"),
            (&many, 1800, "too many comparisons"),
            (&deep, 64, "nested too deeply"),
        ];
        for (input, position, message) in cases {
            let err = parse(input).expect_err(input);
            assert!(err.message.contains(message), "input {input:?}: {err}");
            assert_eq!(err.position, position, "input {input:?}: {err}");
        }
    }

    #[test]
    fn sort_keys() {
        let field = |s: &str| SortTarget::Field(s.to_string());
        let cases = [
            ("", vec![]),
            ("  ", vec![]),
            ("title", vec![(field("title"), false, 0)]),
            ("-created,+title", vec![(field("created"), true, 1), (field("title"), false, 10)]),
            (
                " -list.name , @random,-@rowid",
                vec![(field("list.name"), true, 2), (SortTarget::Random, false, 14), (SortTarget::Rowid, true, 23)],
            ),
            ("tags:length", vec![(field("tags:length"), false, 0)]),
        ];
        for (input, expected) in cases {
            let keys = parse_sort(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
            let got: Vec<_> = keys.into_iter().map(|k| (k.target, k.descending, k.position)).collect();
            assert_eq!(got, expected, "input {input:?}");
        }
    }

    #[test]
    fn sort_errors() {
        let long = "a".repeat(256);
        let cases: Vec<(&str, usize, &str)> = vec![
            ("a,", 2, "empty sort key"),
            ("a,,b", 2, "empty sort key"),
            ("-", 0, "empty sort key"),
            ("@now", 0, "invalid sort key \"@now\""),
            ("-@request.auth.id", 1, "invalid sort key"),
            ("title desc", 0, "invalid sort key"),
            ("a.", 0, "invalid sort key"),
            ("a,b,c,d,e,f,g,h,i", 16, "too many sort keys"),
            (&long, 0, "sort key is too long"),
        ];
        for (input, position, message) in cases {
            let err = parse_sort(input).expect_err(input);
            assert!(err.message.contains(message), "input {input:?}: {err}");
            assert_eq!(err.position, position, "input {input:?}: {err}");
        }
    }
}
