//! The `writerctl` binary: parse, dispatch, turn an error into an exit status. Nothing else.

mod cli;
mod commands;

use std::io::{self, Write};
use std::process::ExitCode;

use serde_json::json;
use writerctl::error::ErrorCode;
use writerctl::lockfile::LockError;

use cli::{Command, Lazy};
use commands::output::Output;

fn main() -> ExitCode {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let json = argv.iter().any(|a| a == "--json");
    let (cli, path) = match cli::parse(&argv) {
        Ok(parsed) => parsed,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            if json {
                let message = e.to_string();
                let first = message.lines().next().unwrap_or("").trim_start_matches("error: ").to_string();
                print_json_error(ErrorCode::Usage, &first, Some("run `writerctl --help`".into()), None);
            } else {
                let _ = e.print();
            }
            return ExitCode::from(ErrorCode::Usage.exit_code());
        }
    };
    let out = Output { json: cli.json };
    let verbose = cli.verbose;
    // The gate is read once, here, for the whole run (seed 001: snapshotted at startup).
    let settings = match writerctl::config::load(&|k| std::env::var(k).ok()) {
        Ok(s) => s,
        Err(e) => return report(e.into(), out, verbose, &path),
    };
    writerctl::lockfile::trust::set_trusted_groups(settings.trusted_groups.clone());
    let result = match cli.command {
        Command::Acquire(Lazy(a)) => commands::acquire::run(a, out, settings),
        Command::Release(Lazy(a)) => commands::release::run(a, out),
        Command::Seal(Lazy(a)) => commands::seal::run(a, out, settings),
        Command::Takeover(Lazy(a)) => commands::takeover::run(a, out, settings),
        Command::Verify(Lazy(a)) => commands::verify::run(a, out),
        Command::Status(Lazy(a)) => commands::status::run(a, out),
        Command::Recover(Lazy(a)) => commands::recover::run(a, out),
        Command::History(Lazy(a)) => commands::history::run(a, out),
        Command::Run(Lazy(a)) => commands::run::run_cmd(a, out, settings),
        Command::ExecWriter(Lazy(a)) => commands::run::exec_writer(a),
        Command::Completions(Lazy(a)) => commands::docs::completions(a, out, &cli::command()),
        Command::Man(Lazy(a)) => commands::docs::man(a, out, &cli::command()),
        Command::Generate(Lazy(a)) => commands::docs::generate(a, &cli::command()),
        Command::Session(Lazy(c)) => commands::controller::run(c, out),
        Command::Master(Lazy(c)) => commands::master::run(c, out),
        Command::Operator(Lazy(c)) => commands::operator::run(c, out),
        Command::Identity(Lazy(c)) => commands::identity::run(c, out),
        Command::Inbox(Lazy(a)) => commands::inbox::run(a, out),
        Command::Audit(Lazy(a)) => commands::audit::run(a, out),
        Command::Coordinator(Lazy(c)) => commands::serve::run(c, out),
        Command::Channel(Lazy(c)) => commands::work::run_channel(c, out),
        Command::Claim(Lazy(c)) => commands::work::run_claim(c, out),
        Command::Focus(Lazy(c)) => commands::work::run_focus(c, out),
        Command::Steward(Lazy(c)) => commands::work::run_steward(c, out),
        Command::Doctor(Lazy(a)) => commands::doctor::run(a, out),
        Command::Pause(Lazy(a)) => commands::pause::run_pause(a, out),
        Command::Resume(Lazy(a)) => commands::pause::run_resume(a, out),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => report(commands::coord::name_the_coordinator(e), out, verbose, &path),
    }
}

/// Finds the engine error inside an `anyhow` chain: its code, hint and machine-readable
/// details (target_ambiguous's candidates, stale_master's epochs).
fn classify(e: &anyhow::Error) -> (ErrorCode, Option<String>, Option<serde_json::Value>) {
    for cause in e.chain() {
        if let Some(ce) = cause.downcast_ref::<writerctl::claim::ClaimError>() {
            return (ce.code(), ce.hint(), ce.details());
        }
        if let Some((code, hint)) = classify_lock(cause) {
            return (code, hint, None);
        }
    }
    (ErrorCode::Internal, None, None)
}

fn classify_lock(cause: &(dyn std::error::Error + 'static)) -> Option<(ErrorCode, Option<String>)> {
    if let Some(le) = cause.downcast_ref::<LockError>() {
        return Some((le.code(), le.hint()));
    }
    if let Some(re) = cause.downcast_ref::<writerctl::supervisor::RunError>() {
        return Some((re.code(), re.hint()));
    }
    if let Some(ce) = cause.downcast_ref::<writerctl::supervisor::control::ControlError>() {
        return Some((ErrorCode::InvalidArgument, Some(ce.hint())));
    }
    if let Some(pe) = cause.downcast_ref::<writerctl::lockfile::metrics::PublishError>() {
        return Some((pe.code(), pe.hint()));
    }
    if let Some(c) = cause.downcast_ref::<commands::Coded>() {
        return Some((c.code, c.hint.clone()));
    }
    if let Some(ce) = cause.downcast_ref::<writerctl::config::ConfigError>() {
        return Some((ErrorCode::InvalidArgument, Some(ce.hint().into())));
    }
    None
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<io::Error>().is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe))
}

/// Prints the error of the command at `path` (e.g. `"master claim"`) and gives its exit status.
fn report(e: anyhow::Error, out: Output, verbose: bool, path: &str) -> ExitCode {
    if is_broken_pipe(&e) {
        return ExitCode::SUCCESS;
    }
    if let Some(commands::ExitStatus(code)) = e.downcast_ref::<commands::ExitStatus>() {
        return ExitCode::from(*code);
    }
    let (code, hint, details) = classify(&e);
    let mut message = e.to_string();
    if verbose {
        for cause in e.chain().skip(1) {
            message.push_str(&format!(": {cause}"));
        }
    }
    if out.json {
        print_json_error(code, &message, hint, details);
    } else {
        // Messages carry record fields (a holder's hostname) and file names: escaped, so a
        // record cannot forge a line or drive the terminal (issue 22).
        let mut err = io::stderr().lock();
        let _ = writeln!(err, "error: {}", commands::output::clean(&message));
        if let Some(h) = hint {
            let _ = writeln!(err, "hint: {}", commands::output::clean(&h));
        }
        let _ = writeln!(err, "(code: {code}, exit {})", code.exit_code());
    }
    // After the report, so a test that trips it still shows what failed.
    commands::codes::check_declared(path, code);
    ExitCode::from(code.exit_code())
}

fn print_json_error(code: ErrorCode, message: &str, hint: Option<String>, details: Option<serde_json::Value>) {
    let mut doc = json!({"error": {"code": code.as_str(), "message": message, "hint": hint}});
    // Details sit beside code/message/hint (e.g. "candidates" for target_ambiguous).
    if let Some(serde_json::Value::Object(extra)) = details {
        for (k, v) in extra {
            doc["error"][k] = v;
        }
    }
    let mut out = io::stdout().lock();
    let _ = serde_json::to_writer_pretty(&mut out, &doc);
    let _ = writeln!(out);
}
