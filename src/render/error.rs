//! Render errors: each names the profile or template and, where known, the line or field.

use thiserror::Error;

pub type Result<T, E = RenderError> = std::result::Result<T, E>;

#[derive(Debug, Error)]
pub enum RenderError {
    #[error("unknown profile {name:?}; valid profiles: {}", valid.join(", "))]
    UnknownProfile { name: String, valid: Vec<String> },

    #[error("profile {profile}: {message}")]
    Profile { profile: String, message: String },

    #[error("render context: {0}")]
    Context(String),

    #[error("template {template}{}: {message}", at(*line, *column))]
    Template {
        template: String,
        line: Option<usize>,
        column: Option<usize>,
        message: String,
    },

    #[error("template {template}, document {document}: not valid YAML: {message}")]
    Yaml {
        template: String,
        document: usize,
        message: String,
    },

    #[error("template {template}: {kind} {name:?}: field {field}: {message}")]
    Invalid {
        template: String,
        kind: String,
        name: String,
        field: String,
        message: String,
    },
}

fn at(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!(" (line {l}, column {c})"),
        (Some(l), None) => format!(" (line {l})"),
        _ => String::new(),
    }
}

impl RenderError {
    pub(crate) fn from_handlebars(template: &str, e: &handlebars::RenderError) -> Self {
        RenderError::Template {
            template: e
                .template_name
                .clone()
                .unwrap_or_else(|| template.to_owned()),
            line: e.line_no,
            column: e.column_no,
            message: e.reason().to_string(),
        }
    }

    pub(crate) fn from_template_parse(template: &str, e: &handlebars::TemplateError) -> Self {
        let (line, column) = e.pos().map_or((None, None), |(l, c)| (Some(l), Some(c)));
        RenderError::Template {
            template: template.to_owned(),
            line,
            column,
            message: e.reason().to_string(),
        }
    }
}
