//! The handlebars engine: strict mode, no HTML escaping, a few pure helpers.
//!
//! Helpers:
//! - `b64 s` — standard base64 of the string (Secret `data` values);
//! - `quote s` — a JSON string literal, which is also a YAML double-quoted scalar;
//! - `json v` — any value as compact JSON (YAML flow style);
//! - `indent n s` — `s` with every line after the first indented by `n` spaces.

use handlebars::{
    Context, Handlebars, Helper, HelperResult, JsonRender, Output, RenderContext,
    RenderErrorReason, handlebars_helper,
};
use serde_json::Value;

use super::error::{RenderError, Result};

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding.
pub fn base64(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(B64[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

handlebars_helper!(b64: |s: str| base64(s.as_bytes()));
handlebars_helper!(quote: |s: str| serde_json::to_string(s).unwrap_or_default());
handlebars_helper!(json: |v: Json| serde_json::to_string(v).unwrap_or_default());

fn indent(
    h: &Helper<'_>,
    _: &Handlebars<'_>,
    _: &Context,
    _: &mut RenderContext<'_, '_>,
    out: &mut dyn Output,
) -> HelperResult {
    let n = h.param(0).and_then(|p| p.value().as_u64()).ok_or_else(|| {
        RenderErrorReason::ParamTypeMismatchForName("indent", "0".into(), "number".into())
    })?;
    let s = h
        .param(1)
        .ok_or_else(|| RenderErrorReason::ParamNotFoundForIndex("indent", 1))?
        .value()
        .render();
    let pad = " ".repeat(n as usize);
    let mut first = true;
    for line in s.split_inclusive('\n') {
        if !first && line != "\n" {
            out.write(&pad)?;
        }
        out.write(line)?;
        first = false;
    }
    Ok(())
}

/// A fresh registry with yurtctl's settings and helpers.
pub fn registry() -> Handlebars<'static> {
    let mut hb = Handlebars::new();
    hb.set_strict_mode(true);
    hb.register_escape_fn(handlebars::no_escape);
    hb.set_prevent_indent(true);
    hb.register_helper("b64", Box::new(b64));
    hb.register_helper("quote", Box::new(quote));
    hb.register_helper("json", Box::new(json));
    hb.register_helper("indent", Box::new(indent));
    hb
}

/// Renders one template text with `data` (what the profile templates go through).
pub fn render_str(name: &str, text: &str, data: &Value) -> Result<String> {
    let mut hb = registry();
    hb.register_template_string(name, text)
        .map_err(|e| RenderError::from_template_parse(name, &e))?;
    hb.render(name, data)
        .map_err(|e| RenderError::from_handlebars(name, &e))
}
