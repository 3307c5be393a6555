//! Integration tests: one binary, one module per concern.

mod cli;
mod common;
mod golden;
mod http;
mod rules;
mod status_matrix;
