//! The server's signing keys, read the same way by the host (flags,
//! environment, files) and the edge (wrangler secrets).
//!
//! - `STASIS_SECRET`: one key, whose id is [`IMPLIED_KEY_ID`].
//! - `STASIS_KEYS`: several `id=secret` entries, separated by commas,
//!   spaces or line breaks (a line starting with `#` is a comment). A secret
//!   therefore holds no comma and no white space.
//! - `STASIS_SIGNING_KEY_ID`: which key signs new tokens; needed when more
//!   than one key is listed.
//!
//! Tokens signed with any listed key verify; removing a key revokes exactly
//! the tokens it signed. Every refusal names the setting, never a secret.

use stasis_domain::ids;

/// The id of the key `STASIS_SECRET` holds.
pub const IMPLIED_KEY_ID: &str = "default";
/// The shortest secret accepted, in characters.
pub const MIN_SECRET_CHARS: usize = 16;

/// The settings keys come from, as text.
#[derive(Debug, Clone, Copy, Default)]
pub struct KeySettings<'a> {
    /// `STASIS_SECRET`.
    pub secret: Option<&'a str>,
    /// `STASIS_KEYS`.
    pub keys: Option<&'a str>,
    /// `STASIS_SIGNING_KEY_ID`.
    pub signing_key_id: Option<&'a str>,
}

/// Why the key settings were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// A secret shorter than [`MIN_SECRET_CHARS`].
    #[error("{setting}: a secret must be at least {MIN_SECRET_CHARS} characters")]
    TooShort {
        /// `STASIS_SECRET`, or the entry of `STASIS_KEYS`.
        setting: String,
    },
    /// An entry of `STASIS_KEYS` that is not `id=secret`.
    #[error("STASIS_KEYS entry {position} is not id=secret")]
    NotAnEntry {
        /// 1-based.
        position: usize,
    },
    /// A key id that is not an id.
    #[error(
        "STASIS_KEYS entry {position}: a key id matches [A-Za-z0-9_.:-]{{1,128}} and is not . or .."
    )]
    BadKeyId {
        /// 1-based.
        position: usize,
    },
    /// The same id twice (`default` counts when `STASIS_SECRET` is set).
    #[error("key id {id:?} is listed twice")]
    Duplicate {
        /// The id.
        id: String,
    },
    /// `STASIS_KEYS` was set but lists nothing.
    #[error("STASIS_KEYS lists no key")]
    Empty,
    /// Several keys and no `STASIS_SIGNING_KEY_ID`.
    #[error("several keys are configured: STASIS_SIGNING_KEY_ID must name the one that signs")]
    NoSigningKey,
    /// `STASIS_SIGNING_KEY_ID` names no configured key.
    #[error("STASIS_SIGNING_KEY_ID names {id:?}, which is not a configured key")]
    UnknownSigningKey {
        /// The id named.
        id: String,
    },
}

/// One key.
#[derive(Clone)]
struct Key {
    id: String,
    secret: Vec<u8>,
}

/// The keys a server verifies tokens with, one of them signing.
#[derive(Clone)]
pub struct KeyRing {
    keys: Vec<Key>,
    signing: usize,
}

impl std::fmt::Debug for KeyRing {
    /// Ids only: a secret never reaches a log.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyRing")
            .field("key_ids", &self.key_ids().collect::<Vec<_>>())
            .field("signing", &self.signing_key_id())
            .finish()
    }
}

impl KeyRing {
    /// The keys the settings describe; `None` when no key is configured at
    /// all (the host then serves loopback only, without auth).
    pub fn from_settings(settings: &KeySettings<'_>) -> Result<Option<Self>, KeyError> {
        let mut keys = Vec::new();
        if let Some(secret) = settings.secret.map(str::trim).filter(|s| !s.is_empty()) {
            keys.push(key(IMPLIED_KEY_ID, secret, "STASIS_SECRET")?);
        }
        if let Some(listed) = settings.keys {
            let before = keys.len();
            parse_list(listed, &mut keys)?;
            if keys.len() == before {
                return Err(KeyError::Empty);
            }
        }
        if keys.is_empty() {
            return Ok(None);
        }
        let signing = signing_index(&keys, settings.signing_key_id)?;
        Ok(Some(Self { keys, signing }))
    }

    /// One key under the implied id, as `STASIS_SECRET` alone gives.
    pub fn single(secret: &str) -> Result<Self, KeyError> {
        let settings = KeySettings {
            secret: Some(secret),
            ..KeySettings::default()
        };
        Self::from_settings(&settings)?.ok_or(KeyError::TooShort {
            setting: "STASIS_SECRET".into(),
        })
    }

    /// Every key id, in the order configured.
    pub fn key_ids(&self) -> impl Iterator<Item = &str> {
        self.keys.iter().map(|k| k.id.as_str())
    }

    /// The id of the key that signs new tokens.
    pub fn signing_key_id(&self) -> &str {
        self.keys
            .get(self.signing)
            .map_or(IMPLIED_KEY_ID, |k| k.id.as_str())
    }

    /// The secret of key `id`, if configured.
    pub(super) fn secret(&self, id: &str) -> Option<&[u8]> {
        self.keys
            .iter()
            .find(|k| k.id == id)
            .map(|k| k.secret.as_slice())
    }
}

fn parse_list(listed: &str, keys: &mut Vec<Key>) -> Result<(), KeyError> {
    let entries = listed
        .lines()
        .map(str::trim)
        .filter(|line| !line.starts_with('#'))
        .flat_map(|line| line.split(|c: char| c == ',' || c.is_whitespace()))
        .filter(|entry| !entry.is_empty());
    for (index, entry) in entries.enumerate() {
        let position = index + 1;
        let (id, secret) = entry
            .split_once('=')
            .ok_or(KeyError::NotAnEntry { position })?;
        if !ids::is_valid_id(id) {
            return Err(KeyError::BadKeyId { position });
        }
        let key = key(id, secret, &format!("STASIS_KEYS entry {position} ({id})"))?;
        if keys.iter().any(|k| k.id == key.id) {
            return Err(KeyError::Duplicate { id: key.id });
        }
        keys.push(key);
    }
    Ok(())
}

fn key(id: &str, secret: &str, setting: &str) -> Result<Key, KeyError> {
    if secret.chars().count() < MIN_SECRET_CHARS {
        return Err(KeyError::TooShort {
            setting: setting.to_owned(),
        });
    }
    Ok(Key {
        id: id.to_owned(),
        secret: secret.as_bytes().to_vec(),
    })
}

fn signing_index(keys: &[Key], named: Option<&str>) -> Result<usize, KeyError> {
    match named.map(str::trim).filter(|n| !n.is_empty()) {
        Some(id) => keys
            .iter()
            .position(|k| k.id == id)
            .ok_or_else(|| KeyError::UnknownSigningKey { id: id.to_owned() }),
        None if keys.len() == 1 => Ok(0),
        None => Err(KeyError::NoSigningKey),
    }
}

#[cfg(test)]
#[allow(clippy::panic, reason = "a test fails loudly")]
mod tests {
    use super::*;

    const A: &str = "aaaaaaaaaaaaaaaa";
    const B: &str = "bbbbbbbbbbbbbbbb";

    fn ring(secret: Option<&str>, keys: Option<&str>, signing: Option<&str>) -> KeyRing {
        let settings = KeySettings {
            secret,
            keys,
            signing_key_id: signing,
        };
        match KeyRing::from_settings(&settings) {
            Ok(Some(ring)) => ring,
            other => panic!("expected keys, got {other:?}"),
        }
    }

    fn refusal(secret: Option<&str>, keys: Option<&str>, signing: Option<&str>) -> KeyError {
        let settings = KeySettings {
            secret,
            keys,
            signing_key_id: signing,
        };
        match KeyRing::from_settings(&settings) {
            Err(err) => err,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn a_single_secret_is_the_default_key_and_signs() {
        let keys = ring(Some(A), None, None);
        assert_eq!(keys.key_ids().collect::<Vec<_>>(), [IMPLIED_KEY_ID]);
        assert_eq!(keys.signing_key_id(), IMPLIED_KEY_ID);
        assert_eq!(keys.secret(IMPLIED_KEY_ID), Some(A.as_bytes()));
    }

    #[test]
    fn a_list_takes_commas_spaces_lines_and_comments() {
        let text = format!("# rotation of May\nold={A}, new={B}\n\n");
        let keys = ring(None, Some(&text), Some("new"));
        assert_eq!(keys.key_ids().collect::<Vec<_>>(), ["old", "new"]);
        assert_eq!(keys.signing_key_id(), "new");
        let both = ring(Some(A), Some(&format!("k2={B}")), Some("k2"));
        assert_eq!(both.key_ids().collect::<Vec<_>>(), [IMPLIED_KEY_ID, "k2"]);
    }

    #[test]
    fn nothing_configured_is_no_keys() {
        assert!(matches!(
            KeyRing::from_settings(&KeySettings::default()),
            Ok(None)
        ));
    }

    #[test]
    fn bad_settings_are_refused_without_showing_a_secret() {
        let cases = [
            (refusal(Some("short"), None, None), "STASIS_SECRET"),
            (refusal(None, Some("k=short"), None), "entry 1"),
            (refusal(None, Some(&format!("k={A} oops")), None), "entry 2"),
            (refusal(None, Some(&format!("../x={A}")), None), "entry 1"),
            (refusal(None, Some(&format!("k={A},k={B}")), None), "twice"),
            (refusal(None, Some(" , "), None), "no key"),
            (
                refusal(None, Some(&format!("a={A} b={B}")), None),
                "SIGNING",
            ),
            (refusal(Some(A), None, Some("other")), "other"),
        ];
        for (err, expected) in cases {
            let text = err.to_string();
            assert!(text.contains(expected), "{text:?} should name {expected}");
            assert!(
                !text.contains(A) && !text.contains(B),
                "{text:?} shows a secret"
            );
        }
        assert!(!format!("{:?}", ring(Some(A), None, None)).contains(A));
    }
}
