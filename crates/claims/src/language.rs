//! Whether the checker can read a message: English, or not.
//!
//! The claim rules are English; a message in another language would find no
//! claims and pass, which is the one answer it must never get. So a sentence
//! that is mostly another language's common words, or mostly another script,
//! makes the whole message unreadable. Names in quotes and code spans do not
//! count: a card may well be called "Einkaufen".

use crate::token::{Kind, Token};
use crate::vocabulary::{ENGLISH, FOREIGN};

/// Fewer words than this say too little to tell a language by its words.
const MIN_WORDS: usize = 3;

/// True when the tokens of one sentence are not English.
pub fn unreadable(tokens: &[Token]) -> bool {
    let mut english = 0usize;
    let mut foreign = 0usize;
    let mut words = 0usize;
    let mut latin = 0usize;
    let mut other = 0usize;
    let mut accented = 0usize;
    for t in tokens.iter().filter(|t| t.kind == Kind::Word) {
        words += 1;
        if t.norm.chars().any(|c| c.is_alphabetic() && !c.is_ascii() && is_latin(c)) {
            accented += 1;
        }
        let w = t.norm.as_str();
        if ENGLISH.contains(&w) {
            english += 1;
        } else if FOREIGN.contains(&w) {
            foreign += 1;
        }
        for c in w.chars().filter(|c| c.is_alphabetic()) {
            if is_latin(c) {
                latin += 1;
            } else {
                other += 1;
            }
        }
    }
    if other >= 4 && other > latin {
        return true;
    }
    // Letters English does not use, in several words of a sentence that has
    // few English words: "Przeniosłem kartę … oznaczyłem ją". One such word
    // is a name ("Chloé"), not a language.
    let accented = accented >= 2 && english * 2 < words;
    accented || (words >= MIN_WORDS && foreign >= 2 && foreign > english)
}

/// Latin letters, with the accented ones of the languages written in them.
fn is_latin(c: char) -> bool {
    c.is_ascii_alphabetic() || ('\u{00c0}'..='\u{024f}').contains(&c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::token::tokens;

    #[test]
    fn tells_english_from_other_languages() {
        for english in [
            "I moved 'Einkaufen gehen' to Done.",
            "Added the card to To Do",
            "ok",
            "Moved Fix login to Done, la la.",
            "I added 買い物 to the list",
            "Moved Release v1.2, Crash on save and Buy milk to Done",
            "Fix login → Done",
            "'Team lunch' is now paid by Chloé, not Zoë.",
            "Logged a €120 expense “Client dinner” under Client visits, spent yesterday.",
        ] {
            assert!(!unreadable(&tokens(english)), "{english}");
        }
        for foreign in [
            "Ich habe die Karte nach Done verschoben.",
            "J'ai déplacé la carte vers Done.",
            "He movido la tarjeta a Done y la he marcado.",
            "カードを完了に移動しました",
            "נקבע שהכרטיס הועבר לרשימה",
            "Ik heb de kaart naar Done verplaatst.",
            "Przeniosłem kartę 'Fix login' do kolumny Done i oznaczyłem ją jako zrobioną.",
            "Jag flyttade kortet 'Fix login' till Done och markerade det som klart.",
            "Saya telah memindahkan kartu 'Fix login' ke Done.",
        ] {
            assert!(unreadable(&tokens(foreign)), "{foreign}");
        }
    }
}
