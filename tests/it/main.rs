//! Integration tests: one binary, one module per concern.

// Clippy's pedantic group is for the library; tests keep their tables and long scenarios.
#![allow(clippy::pedantic)]

mod acceptance;
mod autoscaling;
mod bad_input;
mod bounded;
mod child_metadata;
mod children;
mod cli;
mod common;
mod defaults;
mod discovery;
mod extstore;
mod first_status;
mod from_bitnami;
mod golden;
mod high_availability;
mod http;
mod images;
#[path = "../support/leaving.rs"]
mod leaving;
mod memcached_container;
mod monitoring;
mod no_secrets;
mod pod;
mod pod_security;
mod properties;
mod proxy;
mod proxy_monitoring;
mod proxy_network;
mod proxy_status;
mod reference;
mod reload_report;
mod running_layouts;
mod secure;
mod security;
mod service;
mod service_monitor;
mod status_matrix;
mod taken_names;
mod upgrade;
mod upgrade_fixtures;
mod upgrade_programs;
mod validation;
mod warm_restart;
mod workload;
mod zones;
