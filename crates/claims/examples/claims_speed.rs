//! How fast a check is: a ~2 KB message against a turn of 1,000 writes.
//!
//! `cargo run --release -p a2app-claims --example claims_speed` prints the
//! checks per second and the mean time of one check (the goal: under 1 ms).

use a2app_claims::{Action, App, Checker, Turn, Write, check, corpus};
use jiff::civil::Date;
use jiff::tz::TimeZone;
use serde_json::{Map, Value, json};
use std::time::Instant;

const LISTS: [&str; 5] = ["Backlog", "To Do", "In Progress", "Review", "Done"];
const PEOPLE: [&str; 3] = ["Ann", "Bob", "Chen"];

fn main() {
    let describe = corpus::describe(
        "kanban",
        "UTC",
        include_str!("../../../examples/kanban/schema.json"),
        Some(include_str!("../../../examples/kanban/operations.json")),
    )
    .expect("the kanban example's describe");
    let app = App { describe: &describe, today: Date::constant(2026, 7, 30), zone: TimeZone::UTC };
    let turn = turn(1_000);
    let message = message();
    let first = check(&app, &turn, &message);
    println!(
        "message {} bytes, turn {} writes: {} claims, verdict {:?}",
        message.len(),
        turn.writes.len(),
        first.claims.len(),
        first.verdict
    );
    // A server keeps one `Checker` per app; `check` builds one per call.
    let checker = Checker::new(app.clone());
    measure("Checker::check (the app's words read once)", || checker.check(&turn, &message));
    measure("check (the app's words read per call)", || check(&app, &turn, &message));
}

fn measure(what: &str, run: impl Fn() -> a2app_claims::Check) {
    for _ in 0..50 {
        std::hint::black_box(run());
    }
    let runs = 2_000u32;
    let start = Instant::now();
    for _ in 0..runs {
        std::hint::black_box(run());
    }
    let elapsed = start.elapsed();
    println!(
        "{what}: {runs} checks in {:.2?}: {:.0} checks/s, mean {:.3} ms per check",
        elapsed,
        f64::from(runs) / elapsed.as_secs_f64(),
        (elapsed / runs).as_secs_f64() * 1_000.0
    );
}

fn fields(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// Creates, moves, assignments, renames and deletes of cards called "Task 0001" on.
fn turn(n: usize) -> Turn {
    let mut writes = Vec::with_capacity(n);
    for i in 0..n {
        let title = format!("Task {:04}", i / 4);
        let id = format!("c{:014}", i / 4);
        let list = LISTS[i % LISTS.len()];
        let mut w = match i % 4 {
            0 => {
                let mut w = Write::new(Action::Create, "cards", &id);
                w.fields = fields(json!({"title": title, "list": format!("l{list}")}));
                w.ref_labels.insert("list".into(), vec![list.into()]);
                w.text = format!("Added \"{title}\" to {list}");
                w
            }
            1 => {
                let mut w = Write::new(Action::Update, "cards", &id);
                w.fields = fields(json!({"list": format!("l{list}"), "priority": "high"}));
                w.ref_labels.insert("list".into(), vec![list.into()]);
                w.text = format!("Updated \"{title}\": list → {list}, priority → high");
                w
            }
            2 => {
                let person = PEOPLE[i % PEOPLE.len()];
                let mut w = Write::new(Action::Update, "cards", &id);
                w.fields = fields(json!({"assignees": [format!("m{person}")], "due_day": "2026-07-31"}));
                w.ref_labels.insert("assignees".into(), vec![person.into()]);
                w.text = format!("Updated \"{title}\": assignees → {person}, due → Fri 31 Jul");
                w
            }
            _ => {
                let mut w = Write::new(Action::Delete, "cards", &id);
                w.fields = fields(json!({"title": title, "list": format!("l{list}")}));
                w.ref_labels.insert("list".into(), vec![list.into()]);
                w.text = format!("Deleted \"{title}\" from cards");
                w
            }
        };
        w.label = title;
        w.place = vec![list.into()];
        w.at = format!("2026-07-30 09:{:02}:{:02}.000Z", (i / 60) % 60, i % 60);
        writes.push(w);
    }
    Turn { writes }
}

/// An agent's summary of a long turn: about 2 KB of Markdown with claims,
/// negations, plans and a question.
fn message() -> String {
    let mut m = String::from("## What I did\n\n");
    for k in 0..14 {
        let list = LISTS[(k * 4 + 1) % LISTS.len()];
        m.push_str(&format!("- Moved **Task {k:04}** to *{list}* and set its priority to high\n"));
    }
    m.push_str("- Added 'Task 0020' to Backlog, and 'Task 0021' is now assigned to Chen.\n");
    m.push_str("- Deleted `Task 0030` and `Task 0031`; I did not touch the other cards.\n\n");
    m.push_str("## Not done\n\n- Archive the cards in Done (that needs your approval)\n");
    m.push_str("- Rename the Review list\n\n");
    m.push_str("I could not move 'Task 0400' to Done, because it does not exist. ");
    m.push_str("If you want, I can also schedule the remaining tasks for next Friday. ");
    m.push_str("Shall I export the board when you are happy with it? ");
    while m.len() < 2_000 {
        m.push_str("Nothing else was changed on the board. ");
    }
    m
}
