//! writerctl's one integration-test binary: every test runs the real `writerctl` binary on
//! staged directories. Add new files as modules here; `every_test_file_is_wired_in` fails
//! when one is forgotten.
#![allow(clippy::disallowed_methods)] // tests stage and mutate files by hand

mod support;
mod support_api;
mod throwaway;

mod abuse_net;
mod abuse_slots;
mod acquire_release;
mod arbiter;
mod book;
mod budget;
mod codes;
mod container;
mod crash;
mod deploy;
mod doctor;
mod dry_run;
mod enroll;
mod evidence;
mod flags;
mod fsmount;
mod grafana;
mod handoff;
mod history;
mod hostile;
mod hung_lockdir;
mod identity;
mod import_cycles;
mod man;
mod master;
mod master_audit;
mod master_claim;
mod master_handoff;
mod master_history;
mod master_inbox;
mod master_operator;
mod master_race;
mod master_session;
mod master_status;
mod master_target;
mod memory_budget;
mod metrics;
mod netfs;
mod newcomer;
mod openapi;
mod pause;
mod planes;
mod pod_recovery;
mod pod_security;
mod proptest_records;
mod race;
mod recover;
mod redis_pg;
mod replay;
mod request_id;
mod retention;
mod run;
mod scan;
mod seal_integrity;
mod serve;
mod serve_hardening;
mod serve_work;
mod services;
mod soak;
mod staged;
mod store_bounds;
mod supervisor_death;
mod torn_tail;
mod trusted_groups;
mod watch;
mod work;
mod work_store;

#[test]
fn every_test_file_is_wired_in() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it");
    let main = std::fs::read_to_string(dir.join("main.rs")).unwrap();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if let Some(stem) = name.strip_suffix(".rs")
            && stem != "main"
        {
            assert!(main.contains(&format!("mod {stem};")), "tests/it/{name} is not declared in tests/it/main.rs");
        }
    }
}
