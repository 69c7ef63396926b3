//! The catalog: the components an app draws and, for each, the properties it
//! reads. It is the security boundary of A2UI: a surface may hold nothing
//! else, so an agent can compose a form, a list, cards or an approval, and
//! nothing that runs code, loads a page or reaches the network.
//!
//! The names and properties are A2UI v1.0's basic catalog's, so an agent
//! written for another renderer works; the catalog is a subset of it (no
//! media, icons, tabs, modals or sliders) and has its own id, because a
//! surface naming the basic catalog would promise components it lacks.

use serde_json::{Value, json};

/// The id a `createSurface` names this catalog by.
pub const CATALOG_ID: &str = "urn:a2app:a2ui:catalog:v1";
/// The A2UI version of every message.
pub const VERSION: &str = "v1.0";

/// What a property holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// A string, or a binding to one.
    Text,
    /// A boolean, or a binding to one.
    Flag,
    /// A list of strings, or a binding to one.
    TextList,
    /// A plain number (not bound).
    Number,
    /// A plain boolean (not bound).
    Switch,
    /// One component id.
    Child,
    /// Component ids, or a template repeated over a list in the data model.
    Children,
    /// What a button does: an event naming one of the app's tools.
    Action,
    /// `[{label, value}]` choices.
    Options,
    /// `{label, description}` for assistive technology.
    Accessibility,
    /// One of the given words.
    OneOf(&'static [&'static str]),
}

/// One property of a component.
#[derive(Debug, Clone, Copy)]
pub struct Prop {
    pub name: &'static str,
    pub kind: Kind,
    pub required: bool,
}

/// One component the catalog draws.
#[derive(Debug)]
pub struct Component {
    pub name: &'static str,
    pub description: &'static str,
    pub props: &'static [Prop],
}

const fn req(name: &'static str, kind: Kind) -> Prop {
    Prop { name, kind, required: true }
}

const fn opt(name: &'static str, kind: Kind) -> Prop {
    Prop { name, kind, required: false }
}

const JUSTIFY: Kind = Kind::OneOf(&["start", "center", "end", "spaceBetween", "spaceAround", "spaceEvenly", "stretch"]);
const ALIGN: Kind = Kind::OneOf(&["start", "center", "end", "stretch"]);

/// Every component, in the order the catalog document lists them.
pub const COMPONENTS: &[Component] = &[
    Component {
        name: "Text",
        description: "Text for the person; simple Markdown is shown as written.",
        props: &[req("text", Kind::Text), opt("variant", Kind::OneOf(&["caption", "body"]))],
    },
    Component {
        name: "Row",
        description: "Children side by side.",
        props: &[req("children", Kind::Children), opt("justify", JUSTIFY), opt("align", ALIGN)],
    },
    Component {
        name: "Column",
        description: "Children one under the other.",
        props: &[req("children", Kind::Children), opt("justify", JUSTIFY), opt("align", ALIGN)],
    },
    Component {
        name: "List",
        description: "A list of children; a template {componentId, path} repeats one child per item of a list in the data model.",
        props: &[
            req("children", Kind::Children),
            opt("direction", Kind::OneOf(&["vertical", "horizontal"])),
            opt("align", ALIGN),
        ],
    },
    Component { name: "Card", description: "One child in a card.", props: &[req("child", Kind::Child)] },
    Component {
        name: "Divider",
        description: "A line between parts.",
        props: &[opt("axis", Kind::OneOf(&["horizontal", "vertical"]))],
    },
    Component {
        name: "Button",
        description: "Runs one of this app's tools with its event's context as the arguments, once the person confirmed a write.",
        props: &[
            req("child", Kind::Child),
            req("action", Kind::Action),
            opt("variant", Kind::OneOf(&["default", "primary", "borderless"])),
        ],
    },
    Component {
        name: "TextField",
        description: "A text the person types, bound to the data model.",
        props: &[
            req("label", Kind::Text),
            opt("value", Kind::Text),
            opt("placeholder", Kind::Text),
            opt("variant", Kind::OneOf(&["shortText", "longText", "number", "obscured"])),
        ],
    },
    Component {
        name: "CheckBox",
        description: "A yes or no the person ticks, bound to the data model.",
        props: &[req("label", Kind::Text), req("value", Kind::Flag)],
    },
    Component {
        name: "ChoicePicker",
        description: "One or several of the options, bound to the data model as a list of values.",
        props: &[
            req("options", Kind::Options),
            req("value", Kind::TextList),
            opt("label", Kind::Text),
            opt("variant", Kind::OneOf(&["mutuallyExclusive", "multipleSelection"])),
        ],
    },
    Component {
        name: "DateTimeInput",
        description: "A date, a time or both (ISO 8601), bound to the data model.",
        props: &[
            req("value", Kind::Text),
            opt("enableDate", Kind::Switch),
            opt("enableTime", Kind::Switch),
            opt("label", Kind::Text),
        ],
    },
];

/// Properties every component may have besides its own.
pub const COMMON: &[Prop] = &[
    req("id", Kind::Text),
    req("component", Kind::Text),
    opt("weight", Kind::Number),
    opt("accessibility", Kind::Accessibility),
];

pub fn component(name: &str) -> Option<&'static Component> {
    COMPONENTS.iter().find(|c| c.name == name)
}

/// The catalog as a document: its id, and each component with its
/// properties, what they hold and which are required. Served to agents so
/// they compose only what is drawn.
pub fn document() -> Value {
    let components: serde_json::Map<String, Value> = COMPONENTS
        .iter()
        .map(|c| {
            let props: serde_json::Map<String, Value> = c
                .props
                .iter()
                .map(|p| (p.name.to_owned(), json!({ "holds": describe(p.kind), "required": p.required })))
                .collect();
            (c.name.to_owned(), json!({ "description": c.description, "properties": props }))
        })
        .collect();
    json!({
        "catalogId": CATALOG_ID,
        "version": VERSION,
        "components": components,
        "common": COMMON.iter().map(|p| p.name).collect::<Vec<_>>(),
        "rules": [
            "A binding is {\"path\": \"/json/pointer\"} into the surface's data model; inside a template, a path without a leading / is relative to the item.",
            "A button's action is {\"event\": {\"name\": <one of this app's tools>, \"context\": {<argument>: <value or binding>}}}; pressing it calls that tool with the context as its arguments, after the person confirmed a write.",
            "No functions: {\"call\": …} values, functionCall actions and function messages are refused.",
        ],
    })
}

fn describe(kind: Kind) -> Value {
    match kind {
        Kind::Text => json!("string or binding"),
        Kind::Flag => json!("boolean or binding"),
        Kind::TextList => json!("list of strings or binding"),
        Kind::Number => json!("number"),
        Kind::Switch => json!("boolean"),
        Kind::Child => json!("component id"),
        Kind::Children => json!("list of component ids, or {componentId, path}"),
        Kind::Action => json!("{event: {name, context}}"),
        Kind::Options => json!("list of {label, value}"),
        Kind::Accessibility => json!("{label, description}"),
        Kind::OneOf(words) => json!(words),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_lists_every_component_once_with_its_properties() {
        let doc = document();
        let names: Vec<&String> = doc["components"].as_object().map(|m| m.keys().collect()).unwrap_or_default();
        assert_eq!(
            names,
            [
                "Text",
                "Row",
                "Column",
                "List",
                "Card",
                "Divider",
                "Button",
                "TextField",
                "CheckBox",
                "ChoicePicker",
                "DateTimeInput"
            ]
        );
        assert_eq!(doc["components"]["Button"]["properties"]["action"]["required"], true);
        assert_eq!(doc["components"]["Text"]["properties"]["variant"]["holds"], json!(["caption", "body"]));
        assert_eq!(doc["catalogId"], CATALOG_ID);
        assert!(component("Image").is_none() && component("Surface").is_none());
    }
}
