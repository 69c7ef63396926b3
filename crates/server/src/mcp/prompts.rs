//! The MCP prompts: the app's presentation examples (`[discovery.presentation]`
//! in app.toml), the same public, invented requests the server card shows a
//! host, offered to the person as ready-made prompts. No arguments, no data.

use a2app_core::App;
use rmcp::ErrorData;
use rmcp::model::{GetPromptResult, Prompt, PromptMessage, Role};
use serde_json::{Value, json};

fn examples(app: &App) -> impl Iterator<Item = &Value> {
    app.definition.config.discovery.presentation.as_ref().and_then(|p| p["examples"].as_array()).into_iter().flatten()
}

/// One prompt per example, in the order app.toml lists them.
pub fn list(app: &App) -> Vec<Prompt> {
    examples(app)
        .map(|e| {
            let description = e["description"].as_str().or(e["title"].as_str()).unwrap_or_default();
            let mut prompt = Prompt::new(e["id"].as_str().unwrap_or_default(), Some(description), None);
            prompt.title = e["title"].as_str().map(str::to_owned);
            prompt
        })
        .collect()
}

/// The example's prompt text as one user message; an unknown name is -32602.
pub fn get(app: &App, name: &str) -> Result<GetPromptResult, ErrorData> {
    let example = examples(app).find(|e| e["id"] == name).ok_or_else(|| {
        ErrorData::invalid_params(format!("no prompt {name}; prompts/list names them"), Some(json!({"name": name})))
    })?;
    let text = example["prompt"].as_str().unwrap_or_default();
    let mut result = GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)]);
    result.description = example["title"].as_str().map(str::to_owned);
    Ok(result)
}
