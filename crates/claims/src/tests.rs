//! Checks of whole messages against small turns: exact verdicts, kinds,
//! reasons and stored values, and messages no input should make panic.

use crate::{Action, App, Checker, Job, Outcome, Turn, Write, check, corpus};
use jiff::civil::Date;
use jiff::tz::TimeZone;
use protocol::claim::{Check, ClaimKind, Reason, Verdict};
use protocol::describe::Describe;
use protocol::operation::JobState;
use protocol::{ErrorCode, Violation};
use serde_json::{Map, Value, json};

fn kanban() -> Describe {
    corpus::describe(
        "kanban",
        "UTC",
        include_str!("../../../examples/kanban/schema.json"),
        Some(include_str!("../../../examples/kanban/operations.json")),
    )
    .expect("the kanban example's describe")
}

fn fields(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

/// An update of a card's list, as the server records it.
fn moved(id: &str, title: &str, from: &str, to: &str) -> Write {
    let mut w = Write::new(Action::Update, "cards", id);
    w.label = title.into();
    w.fields = fields(json!({"list": format!("list_{}", to.to_lowercase())}));
    w.ref_labels.insert("list".into(), vec![to.into()]);
    w.place = vec![from.into()];
    w.text = format!("Updated \"{title}\": list → {to}");
    w
}

fn run(turn: &Turn, message: &str) -> Check {
    let describe = kanban();
    // Thursday 30 July 2026.
    let app = App { describe: &describe, today: Date::constant(2026, 7, 30), zone: TimeZone::UTC };
    check(&app, turn, message)
}

/// The verdict and, per claim, its kind and reason.
fn outline(check: &Check) -> (Verdict, Vec<(ClaimKind, Option<Reason>)>) {
    (check.verdict, check.claims.iter().map(|c| (c.kind, c.reason)).collect())
}

#[test]
fn a_move_the_turn_made_is_backed_by_its_write() {
    let turn = Turn { writes: vec![moved("c1", "Fix login", "To Do", "Done")] };
    let c = run(&turn, "I moved **“Fix login”** to `Done`.");
    assert_eq!(outline(&c), (Verdict::Pass, vec![(ClaimKind::Update, None)]));
    let claim = &c.claims[0];
    assert_eq!((claim.entity.as_deref(), claim.target.as_str()), (Some("cards"), "Fix login"));
    assert_eq!(claim.values.len(), 1);
    assert_eq!((claim.values[0].field.as_deref(), claim.values[0].value.as_str()), (Some("list"), "Done"));
    let write = claim.write.as_ref().expect("the backing write");
    assert_eq!((write.id.as_str(), write.text.as_str()), ("c1", "Updated \"Fix login\": list → Done"));
    assert_eq!(c.confirmations, ["Updated \"Fix login\": list → Done"]);
    assert!(c.discrepancies.is_empty());
}

#[test]
fn another_value_is_value_differs_with_the_stored_one() {
    let turn = Turn { writes: vec![moved("c1", "Fix login", "To Do", "Review")] };
    let c = run(&turn, "Moved 'Fix login' to Done.");
    assert_eq!(outline(&c), (Verdict::Withheld, vec![(ClaimKind::Update, Some(Reason::ValueDiffers))]));
    let value = &c.claims[0].values[0];
    assert_eq!(
        (value.field.as_deref(), value.value.as_str(), value.stored.as_deref()),
        (Some("list"), "Done", Some("Review"))
    );
    let d = &c.discrepancies[0];
    assert_eq!((d.reason, d.claim), (Reason::ValueDiffers, Some(0)));
    // What the message says, what the system has, what to do.
    assert!(d.message.contains("“Moved \"Fix login\" to Done”"), "{}", d.message);
    assert!(d.message.contains("list → Review (not Done)"), "{}", d.message);
    assert!(d.message.contains("correct the message"), "{}", d.message);
}

/// The namesake rule: two cards are called "Fix login"; the one in To Do was
/// moved, and a message that names the one in Backlog is about the other card.
#[test]
fn namesake_rule_a_label_is_not_an_identity() {
    let turn = Turn { writes: vec![moved("c2", "Fix login", "To Do", "Done")] };
    let named_right = run(&turn, "Moved the 'Fix login' card from To Do to Done.");
    assert_eq!(outline(&named_right), (Verdict::Pass, vec![(ClaimKind::Update, None)]));
    let other = run(&turn, "Moved the 'Fix login' card in Backlog to Done.");
    assert_eq!(outline(&other), (Verdict::Withheld, vec![(ClaimKind::Update, Some(Reason::WrongTarget))]));
    assert_eq!(other.claims[0].write.as_ref().map(|w| w.id.as_str()), Some("c2"));
    // Without a place the message could mean either: the written one backs it.
    let either = run(&turn, "Moved 'Fix login' to Done.");
    assert_eq!(outline(&either).0, Verdict::Pass);
}

#[test]
fn similar_names_are_different_records() {
    let mut w = Write::new(Action::Delete, "cards", "c3");
    w.label = "Reports".into();
    w.text = "Deleted \"Reports\" from cards".into();
    let turn = Turn { writes: vec![w] };
    assert_eq!(outline(&run(&turn, "Deleted 'Reports'.")), (Verdict::Pass, vec![(ClaimKind::Delete, None)]));
    assert_eq!(
        outline(&run(&turn, "Deleted 'Report'.")),
        (Verdict::Withheld, vec![(ClaimKind::Delete, Some(Reason::WrongTarget))])
    );
}

#[test]
fn a_refused_attempt_is_refused_write_with_its_codes() {
    let mut w = Write::new(Action::Update, "cards", "c4");
    w.label = "Report".into();
    w.fields = fields(json!({"priority": "critical"}));
    w.outcome = Outcome::Refused(vec![Violation::new(ErrorCode::InvalidEnum, "not a priority").field("priority")]);
    let turn = Turn { writes: vec![w] };
    let c = run(&turn, "Set 'Report' to critical priority.");
    assert_eq!(outline(&c), (Verdict::Withheld, vec![(ClaimKind::Update, Some(Reason::RefusedWrite))]));
    assert_eq!(c.claims[0].violations, [ErrorCode::InvalidEnum]);
    assert!(c.confirmations.is_empty(), "a refused write confirms nothing");
    // Saying it was refused is honest.
    assert_eq!(
        outline(&run(&turn, "I could not set 'Report' to critical: the app refused the value.")).0,
        Verdict::Pass
    );
}

#[test]
fn a_job_still_running_has_not_finished() {
    let mut w = Write::new(Action::JobStarted, "", "export_board");
    w.job = Some(Job { id: "j1".into(), state: JobState::Running });
    w.text = "Ran operation export_board: started job j1".into();
    let turn = Turn { writes: vec![w] };
    let c = run(&turn, "The export has finished.");
    assert_eq!(outline(&c), (Verdict::Withheld, vec![(ClaimKind::Job, Some(Reason::JobNotFinished))]));
    assert_eq!(c.claims[0].job_state, Some(JobState::Running));
    assert_eq!(
        outline(&run(&turn, "I started the export; it is still running.")),
        (Verdict::Pass, vec![(ClaimKind::Job, None)])
    );
}

#[test]
fn nothing_written_is_no_write() {
    let c = run(&Turn::default(), "- Added 'Book flights' to To Do\n- Marked `Old task` as done\n- Ran clear_done");
    assert_eq!(
        outline(&c),
        (
            Verdict::Withheld,
            vec![
                (ClaimKind::Create, Some(Reason::NoWrite)),
                (ClaimKind::Update, Some(Reason::NoWrite)),
                (ClaimKind::Run, Some(Reason::NoWrite))
            ]
        )
    );
    assert_eq!(c.discrepancies.len(), 3);
    assert!(
        c.discrepancies[0].message.contains("make the write, or take the claim out"),
        "{}",
        c.discrepancies[0].message
    );
}

#[test]
fn statements_that_are_not_claims() {
    for message in [
        "I couldn't move 'Fix login' to Done.",
        "Nothing was changed.",
        "I didn't delete 'Reports'.",
        "I will move 'Fix login' to Done.",
        "I'll archive 'Old task' tomorrow.",
        "Shall I move 'Fix login' to Done?",
        "Would you like me to delete 'Reports'?",
        "If you want, I can set 'Report' to high priority.",
        "I tried to rename 'Write docs', but the title was too long.",
        "You asked me to \"delete all cards\".",
        "> Moved everything to Done",
        "'Fix login' is in Done.",
        "'Write docs' is assigned to Ann.",
        "'Old task' had already been moved to Done.",
        "## Not done\n- Moved 'Report' to Review",
        "- [ ] Moved 'Report' to Review",
        "~~Moved 'Report' to Review~~",
        "```\nMoved 'Report' to Review\n```",
    ] {
        let c = run(&Turn::default(), message);
        assert_eq!(outline(&c), (Verdict::Pass, vec![]), "{message}");
    }
}

#[test]
fn relative_dates_are_read_in_the_apps_calendar() {
    let mut w = Write::new(Action::Create, "cards", "c5");
    w.label = "Call plumber".into();
    w.fields = fields(json!({"title": "Call plumber", "list": "l2", "due_day": "2026-07-31"}));
    w.ref_labels.insert("list".into(), vec!["To Do".into()]);
    let turn = Turn { writes: vec![w] };
    let c = run(&turn, "Added 'Call plumber' to To Do, due Friday.");
    assert_eq!(outline(&c), (Verdict::Pass, vec![(ClaimKind::Create, None)]));
    let due = &c.claims[0].values[1];
    assert_eq!(
        (due.value.as_str(), due.read.as_deref(), due.field.as_deref()),
        ("Friday", Some("2026-07-31"), Some("due_day"))
    );
    let off = run(&turn, "Added 'Call plumber' to To Do, due Monday.");
    assert_eq!(off.claims[0].values[1].stored.as_deref(), Some("2026-07-31"));
    assert_eq!(off.claims[0].reason, Some(Reason::ValueDiffers));
}

#[test]
fn a_message_the_checker_cannot_read_is_withheld_and_says_why() {
    let turn = Turn { writes: vec![moved("c1", "Fix login", "To Do", "Done")] };
    let c = run(&turn, "Ich habe die Karte 'Fix login' nach Done verschoben.");
    assert_eq!(c.verdict, Verdict::Withheld);
    assert_eq!(c.discrepancies.len(), 1);
    assert_eq!((c.discrepancies[0].reason, c.discrepancies[0].claim), (Reason::UnreadableLanguage, None));
    assert!(c.discrepancies[0].message.contains("not in English"));
    assert_eq!(
        c.confirmations,
        ["Updated \"Fix login\": list → Done"],
        "the person can still be shown what was stored"
    );
}

#[test]
fn a_checker_answers_as_check_does() {
    let describe = kanban();
    let app = App { describe: &describe, today: Date::constant(2026, 7, 30), zone: TimeZone::UTC };
    let turn = Turn { writes: vec![moved("c1", "Fix login", "To Do", "Done")] };
    let checker = Checker::new(app.clone());
    for message in ["Moved 'Fix login' to Done.", "Moved 'Fix login' to Review.", ""] {
        assert_eq!(checker.check(&turn, message), check(&app, &turn, message));
    }
}

#[test]
fn the_answer_travels_in_the_wire_shape() {
    let turn = Turn { writes: vec![moved("c1", "Fix login", "To Do", "Review")] };
    let json = serde_json::to_value(run(&turn, "Moved 'Fix login' to Done.")).unwrap_or_default();
    assert_eq!(json["verdict"], "withheld");
    assert_eq!(json["claims"][0]["kind"], "update");
    assert_eq!(json["claims"][0]["reason"], "value_differs");
    assert_eq!(json["claims"][0]["values"][0]["stored"], "Review");
    assert_eq!(json["discrepancies"][0]["reason"], "value_differs");
    assert!(json.get("cursor").is_none());
}

/// A small deterministic generator, for bytes no one would write.
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn no_message_makes_it_panic() {
    let turn = Turn { writes: vec![moved("c1", "Fix login", "To Do", "Done")] };
    let mut odd: Vec<String> = [
        "",
        "   \n\t\n",
        "**\n---\n#\n> \n- \n1. \n|\n```",
        "🎉🎉🎉 ✅ ❌ 👍🏽",
        "נקבע שהכרטיס הועבר לרשימה",
        "\u{202e}Moved 'Fix login' to Done\u{202c}",
        "'''''''''''''''''''''''''''''''",
        "((((((((((((((((((((((((((((((moved",
        "))))))))) moved 'x' (",
        "“unclosed quote moved to Done",
        "Moved to: : : : → → ->",
        "did did did did",
        "it it it it moved it",
        "Moved ' ' to ''",
        "\u{0}\u{1}\u{7f} moved \u{feff}",
        "Renamed 'Fix login' to",
        "Set the priority of",
        "in 99999999999999999999 days",
        "Moved 'Fix login' to Done on 31 Feb 2026 and 99 Jul",
        "$-, €, ¥1e400 EUR",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    // Very long: far past the 64 KiB the server takes, one claim after another.
    odd.push("I moved 'Fix login' to Done. ".repeat(4_000));
    odd.push("a".repeat(200_000));
    odd.push("'".repeat(70_000));
    odd.push(format!("Moved '{}' to Done", "x".repeat(100_000)));
    let mut noise = Noise(0x9e37_79b9_7f4a_7c15);
    for _ in 0..200 {
        let len = (noise.next() % 600) as usize;
        let bytes: Vec<u8> = (0..len).map(|_| (noise.next() % 256) as u8).collect();
        odd.push(String::from_utf8_lossy(&bytes).into_owned());
        // Words of the vocabulary in random order, which reach deeper than bytes do.
        let words = [
            "moved",
            "'Fix login'",
            "to",
            "Done",
            "not",
            "I",
            "it",
            "and",
            ",",
            ":",
            "(",
            ")",
            "both",
            "now",
            "is",
            "due",
            "Friday",
            "€5",
            "as",
            "from",
            "renamed",
            "deleted",
            "the",
            "card",
            "?",
            "did",
            "move",
            "export",
        ];
        let sentence: Vec<&str> =
            (0..(noise.next() % 40)).map(|_| words[(noise.next() % words.len() as u64) as usize]).collect();
        odd.push(sentence.join(" "));
    }
    for message in &odd {
        let c = run(&turn, message);
        assert_eq!(c.verdict == Verdict::Withheld, !c.discrepancies.is_empty(), "{message:.80}");
    }
}
