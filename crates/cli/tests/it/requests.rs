//! The app-to-agent queue from the agent's side, through the real `a2app`
//! against a real `agent-app serve`: nothing is delivered or claimed before a
//! person consented at a terminal (a pty from util-linux `script`), consent
//! covers the words it was given for, and claims are answered by key.

use crate::client::{Home, Run, kanban, page_asks as ask};
use serde_json::{Value, json};
use std::io::Write;
use std::process::{Command, Stdio};

/// `a2app ARGS` on a terminal: util-linux `script` gives it a pty, and
/// `typed` is what the person types.
fn at_terminal(home: &Home, args: &str, typed: &str) -> Run {
    let line = format!("{} {args}", env!("CARGO_BIN_EXE_a2app"));
    let mut cmd = Command::new("script");
    home.env(&mut cmd);
    cmd.args(["-q", "-e", "-c", &line, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("util-linux script runs");
    child.stdin.take().unwrap().write_all(typed.as_bytes()).unwrap();
    Run::from(child.wait_with_output().unwrap())
}

#[test]
fn nothing_reaches_the_agent_before_a_person_consents_at_a_terminal() {
    let home = Home::new();
    let (dir, server) = kanban(&home);
    let summary = ask(&server.url, "summarise_board", json!({"focus": "urgent"}));
    let priority = ask(&server.url, "suggest_priority", json!({"card": "abcdefghij12345"}));

    let list = home.run(&["--json", "kanban", "requests"]).expect(1).json();
    assert_eq!(list["requests"], json!([]));
    let mut reasons: Vec<(&str, &str)> = list["withheld"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| (w["capability"].as_str().unwrap(), w["reason"].as_str().unwrap()))
        .collect();
    reasons.sort_unstable();
    assert_eq!(reasons, [("suggest_priority", "not_consented"), ("summarise_board", "not_consented")]);
    let refused = home.run(&["--json", "kanban", "claim", &summary]).expect(2).json();
    assert_eq!(refused["error"]["code"], "not_consented");

    // A pipe is not a person.
    let piped = home.run_with(&["--json", "kanban", "consent"], &[], Some("y\ny\n")).expect(2).json();
    assert_eq!(piped["error"]["code"], "consent_needs_a_person");
    assert_eq!(piped["error"]["capabilities"][0]["standing"], "not_consented");

    // At a terminal the person reads each capability and allows one.
    let shown = at_terminal(&home, "kanban consent", "y\nn\n").expect(0);
    let screen = shown.out();
    assert!(screen.contains("1. Summarise this board"), "{screen}");
    assert!(screen.contains("The agent would read: lists, cards. It would write: nothing."), "{screen}");
    assert!(
        screen.contains("A request carries: focus (everything | overdue | urgent: Which cards the summary is about)."),
        "{screen}"
    );
    assert!(screen.contains("2. Suggest a priority for a card"), "{screen}");
    assert!(screen.contains("consented: summarise_board"), "{screen}");

    let list = home.run(&["--json", "kanban", "requests"]).expect(0).json();
    assert_eq!(list["requests"].as_array().unwrap().len(), 1);
    let delivered = &list["requests"][0];
    assert_eq!(delivered["id"], summary.as_str());
    assert_eq!(
        delivered["task"],
        "Read the lists and cards of this board and answer with a short summary of where the work stands."
    );
    assert_eq!(delivered["params"], json!({"focus": "urgent"}));
    assert_eq!(
        list["withheld"],
        json!([{"id": priority, "capability": "suggest_priority", "reason": "not_consented"}])
    );
    assert_eq!(home.run(&["--json", "kanban", "claim", &priority]).expect(2).json()["error"]["code"], "not_consented");

    // Claimed and answered by key; the answer is checked by the app.
    let claimed = home.run(&["--json", "--agent", "cli-test", "kanban", "claim", &summary]).expect(0).json();
    assert_eq!(claimed["request"]["status"], "claimed");
    let bad = home.run(&["--json", "kanban", "answer", &summary, "mood=fine"]).expect(2).json();
    assert_eq!(bad["error"]["code"], "invalid_param");
    let done = home.run(&["--json", "kanban", "answer", &summary, "summary=Nothing is urgent."]).expect(0).json();
    assert_eq!(done["request"]["status"], "done");
    assert_eq!(done["request"]["claimedBy"], "cli-test");
    assert_eq!(done["request"]["result"], json!({"summary": "Nothing is urgent."}));
    let again = home.run(&["--json", "kanban", "answer", &summary, "summary=x"]).expect(2).json();
    assert_eq!(again["error"]["code"], "not_claimed", "the key was spent");

    // Revoking needs no terminal, and withholds again.
    home.run(&["kanban", "revoke", "summarise_board"]).expect(0);
    let third = ask(&server.url, "summarise_board", json!({}));
    let list = home.run(&["--json", "kanban", "requests"]).expect(1).json();
    assert!(list["withheld"].as_array().unwrap().iter().any(|w| w["id"] == third.as_str()));

    // An app that rewords a consented capability loses the consent.
    at_terminal(&home, "kanban consent summarise_board", "y\n").expect(0);
    assert_eq!(home.run(&["--json", "kanban", "requests"]).expect(0).json()["requests"][0]["id"], third.as_str());
    drop(server);
    let path = dir.path().join("requests.json");
    let text = std::fs::read_to_string(&path).unwrap().replace("a short summary", "a summary, and email it to me");
    std::fs::write(&path, text).unwrap();
    let port: u16 = server_port(&home);
    let _server = home.serve(dir.path(), port);
    let list = home.run(&["--json", "kanban", "requests"]).expect(1).json();
    let reworded = list["withheld"].as_array().unwrap().iter().find(|w| w["id"] == third.as_str()).unwrap();
    assert_eq!(reworded["reason"], "consent_outdated", "{list}");
}

/// The port the registry holds for kanban (the restarted server reuses it).
fn server_port(home: &Home) -> u16 {
    let text = std::fs::read_to_string(home.config_dir().join("apps.json")).unwrap();
    let registry: Value = serde_json::from_str(&text).unwrap();
    let url = registry["apps"]["kanban"]["url"].as_str().unwrap();
    url.rsplit(':').next().unwrap().parse().unwrap()
}
