//! The English the checker reads, in one place: which verbs claim which kind
//! of change, and which words make a statement something other than a claim
//! (a negation, a plan, a question, a quote, a description of what already
//! was). Everything the app adds (entity names, field names, enum values,
//! operation names) comes from describe, in `lexicon`; nothing here names a
//! domain.

use protocol::claim::ClaimKind;

/// Which field a verb's value goes to when the message does not name one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// Where the record lives: its first `ref` field ("moved to Done").
    Place,
    /// Who it is for: a `ref` or `list<ref>` field ("assigned to Ann").
    Person,
    /// The record's label field ("renamed to …").
    Label,
    /// A date field ("scheduled for Friday").
    Date,
    /// A state: a boolean field or an enum value ("marked as done").
    State,
    /// Whatever field the message names ("set the priority to high").
    Any,
}

/// What a verb claims when it is in the past.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claims {
    /// A change of this kind to a record.
    Change(ClaimKind, Slot),
    /// An operation was run (the operation is named after the verb).
    Run,
    /// A background job was started.
    JobStarted,
    /// Work finished: a job when a job is named, else a record marked done.
    Finished,
}

/// One verb: its plain form (for "did move") and the forms that say it happened.
#[derive(Debug)]
pub struct Verb {
    pub lemma: &'static str,
    pub past: &'static [&'static str],
    pub claims: Claims,
}

use ClaimKind::{Create, Delete, Update};

/// The verbs of claims. Forms that are also the plain form ("set", "put")
/// are claims only where the sentence is not a plan, an offer or a question,
/// which the polarity words below decide.
pub const VERBS: &[Verb] = &[
    Verb { lemma: "add", past: &["added"], claims: Claims::Change(Create, Slot::Place) },
    Verb { lemma: "create", past: &["created", "recreated"], claims: Claims::Change(Create, Slot::Place) },
    Verb { lemma: "make", past: &["made"], claims: Claims::Change(Create, Slot::Place) },
    Verb { lemma: "log", past: &["logged"], claims: Claims::Change(Create, Slot::Place) },
    Verb { lemma: "record", past: &["recorded"], claims: Claims::Change(Create, Slot::Place) },
    Verb { lemma: "file", past: &["filed"], claims: Claims::Change(Create, Slot::Place) },
    Verb { lemma: "enter", past: &["entered"], claims: Claims::Change(Create, Slot::Place) },
    Verb { lemma: "move", past: &["moved"], claims: Claims::Change(Update, Slot::Place) },
    Verb { lemma: "put", past: &["put"], claims: Claims::Change(Update, Slot::Place) },
    Verb { lemma: "rename", past: &["renamed", "retitled"], claims: Claims::Change(Update, Slot::Label) },
    Verb { lemma: "update", past: &["updated"], claims: Claims::Change(Update, Slot::Any) },
    Verb { lemma: "change", past: &["changed"], claims: Claims::Change(Update, Slot::Any) },
    Verb { lemma: "edit", past: &["edited"], claims: Claims::Change(Update, Slot::Any) },
    Verb { lemma: "set", past: &["set"], claims: Claims::Change(Update, Slot::Any) },
    Verb {
        lemma: "raise",
        past: &["raised", "bumped", "increased", "upped"],
        claims: Claims::Change(Update, Slot::Any),
    },
    Verb { lemma: "lower", past: &["lowered", "decreased", "reduced"], claims: Claims::Change(Update, Slot::Any) },
    Verb {
        lemma: "correct",
        past: &["corrected", "adjusted", "modified", "amended", "switched", "replaced"],
        claims: Claims::Change(Update, Slot::Any),
    },
    Verb { lemma: "mark", past: &["marked", "flagged", "checked"], claims: Claims::Change(Update, Slot::State) },
    Verb { lemma: "tag", past: &["tagged", "labeled", "labelled"], claims: Claims::Change(Update, Slot::State) },
    Verb {
        lemma: "assign",
        past: &["assigned", "reassigned", "unassigned"],
        claims: Claims::Change(Update, Slot::Person),
    },
    Verb {
        lemma: "schedule",
        past: &["scheduled", "rescheduled", "postponed", "dated"],
        claims: Claims::Change(Update, Slot::Date),
    },
    Verb { lemma: "reopen", past: &["reopened", "unchecked"], claims: Claims::Change(Update, Slot::State) },
    Verb { lemma: "delete", past: &["deleted"], claims: Claims::Change(Delete, Slot::Place) },
    Verb { lemma: "remove", past: &["removed"], claims: Claims::Change(Delete, Slot::Place) },
    Verb { lemma: "archive", past: &["archived"], claims: Claims::Change(Delete, Slot::Place) },
    Verb { lemma: "trash", past: &["trashed", "erased", "discarded"], claims: Claims::Change(Delete, Slot::Place) },
    Verb { lemma: "run", past: &["ran", "run", "reran"], claims: Claims::Run },
    Verb { lemma: "execute", past: &["executed"], claims: Claims::Run },
    Verb { lemma: "trigger", past: &["triggered"], claims: Claims::Run },
    Verb { lemma: "invoke", past: &["invoked"], claims: Claims::Run },
    Verb { lemma: "start", past: &["started", "launched", "queued", "kicked"], claims: Claims::JobStarted },
    Verb {
        lemma: "complete",
        past: &["completed", "finished", "closed", "resolved", "succeeded"],
        claims: Claims::Finished,
    },
];

/// The verb a word is a past form of.
pub fn past(word: &str) -> Option<&'static Verb> {
    VERBS.iter().find(|v| v.past.contains(&word))
}

/// The verb a word is the plain form of ("did move").
pub fn lemma(word: &str) -> Option<&'static Verb> {
    VERBS.iter().find(|v| v.lemma == word)
}

/// Words that say the change did not happen.
pub const NEGATIONS: &[&str] = &[
    "not",
    "no",
    "never",
    "nothing",
    "none",
    "nobody",
    "neither",
    "nor",
    "cannot",
    "without",
    "unable",
    "failed",
    "fails",
    "unsuccessful",
    "refused",
    "rejected",
    "prevented",
    "blocked",
    "instead",
];

/// Words that make what follows a plan, an offer or a possibility, not a fact.
pub const MODALS: &[&str] = &[
    "will",
    "shall",
    "would",
    "should",
    "could",
    "can",
    "may",
    "might",
    "must",
    "going",
    "gonna",
    "plan",
    "planning",
    "intend",
    "want",
    "wants",
    "need",
    "needs",
    "let",
    "try",
    "tried",
    "trying",
    "attempt",
    "attempted",
    "attempting",
    "suggest",
    "recommend",
    "propose",
    "offer",
];

/// Words that make the rest of a sentence a condition.
pub const CONDITIONS: &[&str] = &["if", "unless", "whether", "provided", "assuming", "once"];

/// Words that open a question.
pub const QUESTION_OPENERS: &[&str] = &[
    "shall", "should", "would", "do", "does", "did", "can", "could", "will", "is", "are", "was", "were", "have", "has",
    "what", "which", "who", "where", "when", "why", "how", "want", "may", "any",
];

/// Words that put the statement before this turn: a description of what was.
pub const EARLIER: &[&str] = &["already", "still", "previously", "originally", "earlier", "formerly", "had"];

/// Words that make a sentence someone else's: the person's request, quoted.
pub const OTHERS: &[&str] = &["you", "you've", "you'd", "you're", "you'll"];

/// Words that carry a subject or an auxiliary and say nothing of their own.
pub const FILLERS: &[&str] = &[
    "i",
    "we",
    "i've",
    "we've",
    "i'd",
    "we'd",
    "have",
    "has",
    "'ve",
    "just",
    "also",
    "then",
    "successfully",
    "now",
    "finally",
    "and",
    "so",
    "all",
    "did",
    "as",
    "requested",
    "asked",
    "ok",
    "okay",
    "sure",
    "great",
    "first",
    "second",
    "third",
    "lastly",
    "next",
    "after",
    "that",
    "this",
    "here",
    "i'm",
    "am",
    "well",
    "yes",
    "quickly",
    "right",
    "away",
    "today",
    "again",
    "additionally",
    "further",
    "furthermore",
    "moreover",
];

/// Auxiliaries of the passive and the perfect: "was moved", "has been deleted".
pub const AUXILIARIES: &[&str] =
    &["was", "were", "is", "are", "been", "has", "have", "had", "got", "gets", "get", "'s", "it's", "being", "be"];

/// Articles and determiners a name may be preceded by.
pub const ARTICLES: &[&str] =
    &["the", "a", "an", "this", "that", "these", "those", "its", "their", "my", "our", "your"];

/// Prepositions that open a value (or, with "from", where the record was).
pub const PREPOSITIONS: &[&str] =
    &["to", "into", "onto", "in", "as", "from", "for", "on", "under", "with", "due", "by", "at", "of", "via"];

/// Words that join two statements into one sentence.
pub const JOINS: &[&str] = &["and", "or", "then", "plus", "&"];

/// Words that always start a new statement: what follows has its own polarity.
pub const BREAKS: &[&str] = &[
    "but",
    "so",
    "because",
    "although",
    "though",
    "however",
    "whereas",
    "while",
    "since",
    "yet",
    "meanwhile",
    "otherwise",
    "except",
    "unfortunately",
    "sadly",
    "instead",
];

/// Pronouns that point at the record of the claim before.
pub const PRONOUNS: &[&str] = &["it", "them", "this", "that", "both", "one", "these", "those", "they", "each"];

/// State words a finished job is described with: "the export is ready".
pub const FINISHED: &[&str] = &["done", "ready", "complete", "completed", "finished", "available", "succeeded"];

/// Words for a boolean field being true or false when the message names no field.
pub const TRUE_WORDS: &[&str] =
    &["done", "complete", "completed", "finished", "closed", "resolved", "checked", "yes", "true"];
pub const FALSE_WORDS: &[&str] =
    &["not done", "undone", "open", "incomplete", "unchecked", "reopened", "no", "false", "not complete"];

/// Currency signs and the codes they stand for.
pub const CURRENCIES: &[(&str, &str)] = &[("$", "usd"), ("€", "eur"), ("£", "gbp"), ("¥", "jpy")];

/// Month names for explicit dates ("31 Jul", "July 31st").
pub const MONTHS: &[&str] = &["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];

/// Common words of other languages, for telling a message the checker cannot
/// read from one it can (`language`). A few per language suffice: messages
/// are sentences, and sentences are made of these.
pub const FOREIGN: &[&str] = &[
    // German
    "ich",
    "habe",
    "hat",
    "wurde",
    "wurden",
    "der",
    "die",
    "das",
    "und",
    "nicht",
    "ist",
    "auf",
    "eine",
    "einen",
    "verschoben",
    "erstellt",
    "gelöscht",
    "hinzugefügt",
    "erledigt",
    "karte",
    "liste",
    "zu",
    "mit",
    "von",
    "den",
    "dem",
    "auch",
    "aber",
    "schon",
    "jetzt",
    "geändert",
    "genehmigt",
    // French
    "j'ai",
    "je",
    "le",
    "la",
    "les",
    "et",
    "une",
    "un",
    "est",
    "été",
    "dans",
    "pour",
    "pas",
    "vers",
    "déplacé",
    "créé",
    "supprimé",
    "ajouté",
    "carte",
    "liste",
    "fait",
    "aussi",
    "mais",
    "avec",
    "du",
    "des",
    "au",
    // Spanish, Portuguese, Italian
    "el",
    "los",
    "las",
    "y",
    "una",
    "es",
    "fue",
    "movido",
    "creado",
    "borrado",
    "eliminado",
    "añadido",
    "tarjeta",
    "lista",
    "hecho",
    "también",
    "pero",
    "con",
    "del",
    "eu",
    "foi",
    "movi",
    "criei",
    "ho",
    "il",
    "spostato",
    "creato",
    "è",
    "che",
    "ya",
    "já",
    "agregué",
    "moví",
    "creé",
    "añadí",
    "borré",
    "para",
    "em",
    "na",
    // Polish
    "się",
    "jest",
    "nie",
    "jako",
    "oraz",
    "że",
    "kartę",
    "karta",
    "listę",
    "przeniosłem",
    "dodałem",
    "usunąłem",
    // Swedish, Danish, Norwegian
    "jag",
    "och",
    "till",
    "det",
    "som",
    "har",
    "kortet",
    "listan",
    "jeg",
    "og",
    "til",
    "kortet",
    // Indonesian, Malay
    "saya",
    "telah",
    "sudah",
    "kartu",
    "ke",
    "dan",
    "yang",
    "untuk",
    "ini",
    // Turkish
    "kartı",
    "ve",
    "bir",
    "listesine",
    "taşıdım",
    // Dutch
    "ik",
    "heb",
    "het",
    "een",
    "niet",
    "verplaatst",
    "aangemaakt",
    "verwijderd",
    "toegevoegd",
    "naar",
    "kaart",
    "van",
];

/// Common English words, the other side of that comparison.
pub const ENGLISH: &[&str] = &[
    "i",
    "the",
    "a",
    "an",
    "to",
    "and",
    "of",
    "in",
    "is",
    "it",
    "was",
    "were",
    "have",
    "has",
    "had",
    "been",
    "on",
    "for",
    "as",
    "with",
    "that",
    "this",
    "from",
    "not",
    "but",
    "you",
    "we",
    "are",
    "be",
    "now",
    "all",
    "its",
    "my",
    "your",
    "our",
    "their",
    "they",
    "them",
    "me",
    "us",
    "he",
    "she",
    "his",
    "her",
    "by",
    "at",
    "into",
    "about",
    "out",
    "up",
    "over",
    "under",
    "after",
    "before",
    "no",
    "nothing",
    "so",
    "there",
    "here",
    "what",
    "which",
    "who",
    "should",
    "would",
    "can",
    "could",
    "will",
    "did",
    "do",
    "does",
    "didn't",
    "couldn't",
    "i've",
    "i'm",
    "i'd",
    "i'll",
    "it's",
    "also",
    "then",
    "just",
    "only",
    "both",
    "each",
    "every",
    "one",
    "new",
    "any",
    "some",
    "more",
    "other",
    "please",
    "let",
    "know",
    "card",
    "list",
    "moved",
    "added",
    "created",
    "deleted",
    "updated",
    "set",
    "done",
    "changed",
    "marked",
    "renamed",
    "assigned",
    "ran",
    "started",
    "approved",
    "submitted",
    "paid",
];
