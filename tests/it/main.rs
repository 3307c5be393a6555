//! Integration tests: one binary, one module per concern.

// Clippy's pedantic group is for the library; tests keep their tables and long scenarios.
#![allow(clippy::pedantic)]

mod acceptance;
mod bad_input;
mod bounded;
mod cli;
mod common;
mod defaults;
mod discovery;
mod extstore;
mod features;
mod first_status;
mod from_bitnami;
mod golden;
mod http;
mod images;
mod no_secrets;
mod pod_security;
mod properties;
mod reference;
mod reload_report;
mod rules;
mod running_layouts;
mod secure;
mod service_monitor;
mod status_matrix;
mod warm_restart;
mod workload;
mod zones;
