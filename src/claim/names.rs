//! Names people read (projects, identities, surfaces, machines, operators, session ids):
//! refused before they reach a store or a log when they are empty, overlong, hold control
//! or invisible format characters, are not NFC, or would read as a name already there.
//! Below the engine and the domain modules, which all check names.

use super::error::ClaimError;
use super::model::Snapshot;

/// Longest accepted name (project, identity, surface, machine, operator, session id).
pub const MAX_NAME: usize = 256;

/// Refuses empty, overlong or control-character names before they reach a store or a log.
///
/// Names are compared byte for byte by every store, so two names a person reads as the same
/// must not both be accepted (issue 19): a name may hold no Unicode format character
/// (category Cf: bidi overrides such as U+202E, zero-width characters such as U+200B,
/// which make `\u{202e}evil` or `ali\u{200b}ce` look like another name in a table), and it
/// must already be in NFC. Non-NFC names are refused rather than normalized: normalizing
/// would make the stored name differ from the one the caller sent (and the one in its own
/// scripts), while refusing leaves exactly one accepted spelling of each canonically
/// equivalent name, so `é` (U+00E9) and `e` + U+0301 can never coexist.
pub fn validate_name(what: &str, value: &str) -> Result<(), ClaimError> {
    use unicode_normalization::is_nfc;
    use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};
    if value.is_empty() || value.trim() != value {
        return Err(ClaimError::invalid(
            what.to_string(),
            format!("{what} must be non-empty without surrounding spaces"),
        ));
    }
    if value.len() > MAX_NAME {
        return Err(ClaimError::invalid(what.to_string(), format!("{what} is longer than {MAX_NAME} bytes")));
    }
    if value.chars().any(char::is_control) {
        return Err(ClaimError::invalid(what.to_string(), format!("{what} contains a control character")));
    }
    if let Some(c) = value.chars().find(|c| c.general_category() == GeneralCategory::Format) {
        return Err(ClaimError::invalid(
            what.to_string(),
            format!(
                "{what} contains the invisible format character U+{:04X} (bidi controls and zero-width characters \
             make names look alike)",
                u32::from(c)
            ),
        ));
    }
    if !is_nfc(value) {
        return Err(ClaimError::invalid(
            what.to_string(),
            format!("{what} is not in Unicode NFC (composed) form; send the composed spelling"),
        ));
    }
    Ok(())
}

/// Longest accepted `--reason` (issue 30), in bytes: a sentence or two for the audit log,
/// not a document; every audit row, export and history line carries it.
pub const MAX_REASON: usize = crate::lockfile::history::MAX_REASON_BYTES;

/// Refuses a `--reason` that is empty (or only spaces), longer than [`MAX_REASON`] bytes, or
/// holds a control character: a reason is printed in tables, CSV and terminals, where a
/// newline or an escape sequence would forge or hide lines of someone else's row.
/// One rule with the lock-file commands' `--reason` ([`crate::lockfile::history::reason_problem`]).
pub fn validate_reason(reason: &str) -> Result<(), ClaimError> {
    match crate::lockfile::history::reason_problem(reason) {
        Some(problem) => Err(ClaimError::invalid("--reason", problem)),
        None => Ok(()),
    }
}

/// The form two names share when a person would read them as the same (issue 28 point 6):
/// the Unicode TR39 confusable skeleton (`а` U+0430 and `a`, `ｅ` and `e`, `rn` and `m`),
/// taken of the lowercased name and lowercased again, so case variants (`Alice`, `alice`)
/// and look-alikes of them share it too. NFKC first folds compatibility forms (fullwidth,
/// ligatures) the skeleton tables leave apart. Stores still compare names byte for byte;
/// this form is only compared at registration and enrollment, to refuse a second spelling.
pub fn name_skeleton(value: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    let folded: String = value.nfkc().collect::<String>().to_lowercase();
    unicode_security::skeleton(&folded).collect::<String>().to_lowercase()
}

/// Refuses an identity that mixes scripts (TR39 single-script, with the augmented sets that
/// let Japanese mix Han and kana): `pаypal` with one Cyrillic `а` reads as Latin to anyone,
/// and would be a look-alike of a name registered later. Digits and punctuation belong to
/// every script.
pub fn validate_single_script(what: &str, value: &str) -> Result<(), ClaimError> {
    use unicode_security::mixed_script::MixedScript;
    if value.is_single_script() {
        Ok(())
    } else {
        Err(ClaimError::invalid(
            what.to_string(),
            format!("{what} {value:?} mixes scripts (e.g. Latin with Cyrillic or Greek letters); use one script"),
        ))
    }
}

/// Refuses a new identity that a person would read as an existing one (issue 28 point 6:
/// the README says look-alikes are impossible): same TR39 skeleton after case folding, a
/// different spelling. The namespace is the project's identities, enrolled or registered.
/// A name mixing scripts is refused outright, so a look-alike cannot be planted before the
/// name it imitates exists.
pub fn refuse_confusable_identity(snap: &Snapshot, identity: &str) -> Result<(), ClaimError> {
    let skeleton = name_skeleton(identity);
    let existing = snap
        .identities
        .iter()
        .map(|i| i.identity.as_str())
        .chain(snap.controllers.iter().map(|c| c.identity.as_str()))
        .find(|n| *n != identity && name_skeleton(n) == skeleton);
    match existing {
        Some(n) => Err(ClaimError::NameConfusable {
            what: "identity".into(),
            name: identity.to_string(),
            existing: n.to_string(),
        }),
        None => validate_single_script("identity", identity),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_validated() {
        assert!(validate_name("x", "ok name").is_ok());
        for bad in ["", " lead", "trail ", "a\nb", &"x".repeat(MAX_NAME + 1)] {
            let e = validate_name("x", bad).unwrap_err();
            assert!(matches!(&e, ClaimError::InvalidArgument(a) if a.field == "x"), "{bad:?}: {e:?}");
        }
    }

    #[test]
    fn reasons_are_bounded_and_printable() {
        for ok in ["maintenance window", "José's shift", &"r".repeat(MAX_REASON)] {
            assert!(validate_reason(ok).is_ok(), "{ok:?}");
        }
        for bad in ["", "   ", "two\nlines", "tab\there", "esc\u{1b}[2J", &"r".repeat(MAX_REASON + 1)] {
            let e = validate_reason(bad).unwrap_err();
            assert_eq!(e.code(), crate::error::ErrorCode::InvalidArgument, "{bad:?}");
        }
    }

    #[test]
    fn names_refuse_format_characters_and_non_nfc() {
        for ok in ["alice", "José", "名前", "a-b_c.d@e"] {
            assert!(validate_name("x", ok).is_ok(), "{ok:?}");
        }
        // Bidi controls, zero-width characters, the BOM, a soft hyphen: all category Cf.
        for bad in ["\u{202e}evil", "ali\u{200b}ce", "a\u{200d}b", "\u{feff}bob", "a\u{2066}b", "so\u{00ad}ft"] {
            let e = validate_name("identity", bad).unwrap_err();
            assert!(e.to_string().contains("format character"), "{bad:?}: {e}");
        }
        // "é" composed is accepted, the decomposed spelling of the same name is refused.
        let e = validate_name("identity", "Jose\u{301}").unwrap_err();
        assert!(e.to_string().contains("NFC"), "{e}");
    }
}
