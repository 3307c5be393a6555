//! Integration tests: one binary, one module per concern.

mod cli;
mod common;
mod features;
mod golden;
mod http;
mod no_secrets;
mod properties;
mod reference;
mod rules;
mod secure;
mod status_matrix;
