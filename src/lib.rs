//! yurtctl as a library: the pieces the binary and the integration tests share.

pub mod servant;
