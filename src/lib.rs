//! yurtctl as a library: the pieces the binary and the integration tests share.

pub mod app;
pub mod cli;
pub mod cluster;
pub mod exec;
pub mod exit;
pub mod naming;
pub mod output;
pub mod plan;
pub mod reference;
pub mod render;
pub mod rollout;
pub mod selector;
pub mod servant;
