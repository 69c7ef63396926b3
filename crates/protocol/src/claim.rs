//! What checking an agent's message against the stored writes answers.
//!
//! An agent tells a person what it did; the app checks each claim in those
//! words against the writes it stored for that agent in the turn, and answers
//! with a verdict, the claims it found, the system's own confirmations (the
//! receipts' sentences, shown instead of the agent's words) and one sentence
//! per claim the writes do not back. The checking itself lives in
//! `a2app-claims`; these are only the shapes that travel.

use crate::ErrorCode;
use crate::operation::JobState;
use serde::{Deserialize, Serialize};

/// `POST /api/_a2app/claims`: the answer of one check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Check {
    pub verdict: Verdict,
    /// Every claim found, in the order the message makes them.
    pub claims: Vec<Claim>,
    /// The receipts' sentences of the turn's stored writes, in order: what a
    /// person is shown instead of the agent's words.
    pub confirmations: Vec<String>,
    /// One per claim the writes do not back (or one for a message that could not be read).
    pub discrepancies: Vec<Discrepancy>,
    /// Where the next check's turn starts; set by the transport, not the checker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// `withheld`: the message must not reach the person as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Pass,
    Withheld,
}

/// What a claim says happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimKind {
    Create,
    Update,
    Delete,
    /// An operation was run.
    Run,
    /// A background job was started or finished.
    Job,
}

impl ClaimKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ClaimKind::Create => "create",
            ClaimKind::Update => "update",
            ClaimKind::Delete => "delete",
            ClaimKind::Run => "run",
            ClaimKind::Job => "job",
        }
    }
}

/// Why a claim is not backed, or why nothing could be checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// No write of the turn made the change.
    NoWrite,
    /// The change was made, to another record than the one the message names.
    WrongTarget,
    /// The record was written, with another value than the message says.
    ValueDiffers,
    /// The only attempt at it was refused (the guard, or the operation).
    RefusedWrite,
    /// The job was started but has not succeeded.
    JobNotFinished,
    /// The message is in a language the checker does not read.
    UnreadableLanguage,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::NoWrite => "no_write",
            Reason::WrongTarget => "wrong_target",
            Reason::ValueDiffers => "value_differs",
            Reason::RefusedWrite => "refused_write",
            Reason::JobNotFinished => "job_not_finished",
            Reason::UnreadableLanguage => "unreadable_language",
        }
    }
}

/// One affirmative statement that a change happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Claim {
    pub kind: ClaimKind,
    /// The entity, as the message or the matching write names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entity: Option<String>,
    /// The record (or operation) as the message names it; empty when it names none.
    pub target: String,
    /// The values the message says were written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<ClaimedValue>,
    /// The words of the message that make the claim.
    pub text: String,
    pub backed: bool,
    /// The write that backs the claim; for `wrong_target` and `value_differs`,
    /// the write the system has instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write: Option<WriteRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<Reason>,
    /// `refused_write`: the codes the attempt was refused with.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub violations: Vec<ErrorCode>,
    /// `job_not_finished`: where the job is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_state: Option<JobState>,
}

/// A value a claim names: "Done", "high", "Friday", "€42.50".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimedValue {
    /// The field it was matched to, when one was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// As the message says it.
    pub value: String,
    /// How it was read, when that differs from the words: `2026-07-31` for
    /// "Friday", `42.5` for "€42.50".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<String>,
    /// `value_differs`: what the system stored, in a receipt's words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stored: Option<String>,
}

/// A write of the turn: its record id (or operation name) and its receipt sentence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WriteRef {
    pub id: String,
    pub text: String,
}

/// One sentence for the agent: what the message claims, what the system has,
/// and what to do about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Discrepancy {
    pub reason: Reason,
    /// The index in `claims` of the claim it is about; none for a message
    /// that could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim: Option<usize>,
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_travels_in_camel_case_with_snake_case_names() {
        let check = Check {
            verdict: Verdict::Withheld,
            claims: vec![Claim {
                kind: ClaimKind::Update,
                entity: Some("cards".into()),
                target: "Fix login".into(),
                values: vec![ClaimedValue {
                    field: Some("list".into()),
                    value: "Review".into(),
                    read: None,
                    stored: Some("Done".into()),
                }],
                text: "moved Fix login to Review".into(),
                backed: false,
                write: Some(WriteRef { id: "c1".into(), text: "Updated \"Fix login\": list → Done".into() }),
                reason: Some(Reason::ValueDiffers),
                violations: vec![],
                job_state: None,
            }],
            confirmations: vec!["Updated \"Fix login\": list → Done".into()],
            discrepancies: vec![Discrepancy { reason: Reason::ValueDiffers, claim: Some(0), message: "…".into() }],
            cursor: None,
        };
        let json = serde_json::to_value(&check).unwrap();
        assert_eq!(json["verdict"], "withheld");
        assert_eq!(json["claims"][0]["kind"], "update");
        assert_eq!(json["claims"][0]["reason"], "value_differs");
        assert_eq!(json["claims"][0]["values"][0]["stored"], "Done");
        assert!(json["claims"][0].get("jobState").is_none());
        assert_eq!(json["discrepancies"][0]["claim"], 0);
        assert_eq!(serde_json::from_value::<Check>(json).unwrap(), check);
        for reason in [
            Reason::NoWrite,
            Reason::WrongTarget,
            Reason::ValueDiffers,
            Reason::RefusedWrite,
            Reason::JobNotFinished,
            Reason::UnreadableLanguage,
        ] {
            assert_eq!(serde_json::to_value(reason).unwrap(), reason.as_str());
        }
    }
}
