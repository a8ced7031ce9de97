//! Who may connect: the run's token (on every route) and the Origin allow-list (on the
//! websocket upgrade), as Jupyter guards its local server.
//!
//! Why both: a page open in the operator's browser can open a websocket to any port on
//! 127.0.0.1 (browsers let it), so the relay must tell its own pages from others. The
//! Origin header does that for browsers; the token also covers what sends no Origin
//! (roslib in Node, roslibpy) and a page that got around the Origin check (DNS rebinding
//! gives a page a name of its own choosing for 127.0.0.1, but never the token).

use std::fmt;
use std::net::SocketAddr;

use axum::http::{HeaderMap, header};
use subtle::ConstantTimeEq as _;

/// Who may connect to the relay (`token` in its settings, `web.token` in the demo).
///
/// Written as text: `random` (the default) makes a new token each run, shown in the URL
/// the run prints; `none` opens the relay to any program on the machine (and to the pages
/// of allowed origins), which the run then says; anything else is the token itself
/// (letters, digits, `-`, `.`, `_`, `~`: it goes into a URL).
#[derive(Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
#[non_exhaustive]
pub enum RelayToken {
    /// A new token each run: 192 bits from the operating system, in hex.
    #[default]
    Random,
    /// No token asked: the relay is open (said when it starts).
    Open,
    /// This token.
    Fixed(String),
}

impl RelayToken {
    /// The text for a token, or `Err` saying what is allowed.
    pub fn parse(text: &str) -> Result<RelayToken, String> {
        match text.trim() {
            "random" => Ok(RelayToken::Random),
            "none" => Ok(RelayToken::Open),
            "" => Err(
                "an empty token: write `random` (a new one each run), `none` (no token) or a token"
                    .to_owned(),
            ),
            token if token.chars().all(is_url_safe) => Ok(RelayToken::Fixed(token.to_owned())),
            _ => Err(
                "a token is letters, digits, `-`, `.`, `_` and `~` (it goes into a URL)".to_owned(),
            ),
        }
    }
}

fn is_url_safe(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~')
}

impl TryFrom<String> for RelayToken {
    type Error = String;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        RelayToken::parse(&text)
    }
}

impl From<RelayToken> for String {
    fn from(token: RelayToken) -> String {
        match token {
            RelayToken::Random => "random".to_owned(),
            RelayToken::Open => "none".to_owned(),
            RelayToken::Fixed(token) => token,
        }
    }
}

impl fmt::Debug for RelayToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A token set by hand stays out of logs that print the settings.
        match self {
            RelayToken::Random => f.write_str("Random"),
            RelayToken::Open => f.write_str("Open"),
            RelayToken::Fixed(_) => f.write_str("Fixed(..)"),
        }
    }
}

/// A new random token: 24 bytes from the operating system, 48 hex digits (Jupyter's size).
pub(crate) fn random_token() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Why a request was refused.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Denied {
    /// No token in the query or an `Authorization: Bearer` header.
    MissingToken,
    /// A token, not the run's.
    WrongToken,
    /// A websocket from a page of another origin.
    ForeignOrigin(String),
}

/// The run's token and the origins allowed to open the websocket.
#[derive(Debug)]
pub(crate) struct Access {
    /// `None`: the relay is open.
    token: Option<String>,
    /// Normalised origins (`http://127.0.0.1:9090`); `*` allows any.
    origins: Vec<String>,
}

impl Access {
    /// The relay's own origins on `bound`'s port (127.0.0.1, localhost, [::1] and the bound
    /// address) and `extra` ones.
    pub(crate) fn new(token: Option<String>, bound: SocketAddr, extra: &[String]) -> Access {
        let port = bound.port();
        let mut origins = vec![
            format!("http://127.0.0.1:{port}"),
            format!("http://localhost:{port}"),
            format!("http://[::1]:{port}"),
        ];
        if !bound.ip().is_unspecified() {
            origins.push(format!("http://{bound}"));
        }
        origins.extend(extra.iter().map(|o| normalise_origin(o)));
        origins.dedup();
        Access { token, origins }
    }

    /// The token asked of clients, if any.
    pub(crate) fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// The allowed origins, as compared.
    pub(crate) fn origins(&self) -> &[String] {
        &self.origins
    }

    /// Checks the token given as `?token=` or as `Authorization: Bearer <token>`, in
    /// constant time.
    pub(crate) fn check_token(
        &self,
        query_token: Option<&str>,
        headers: &HeaderMap,
    ) -> Result<(), Denied> {
        let Some(expected) = &self.token else {
            return Ok(());
        };
        let bearer = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                let (scheme, token) = v.trim().split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
            });
        let given: Vec<&str> = query_token.into_iter().chain(bearer).collect();
        if given.is_empty() {
            return Err(Denied::MissingToken);
        }
        let matches = given
            .iter()
            .any(|token| bool::from(token.as_bytes().ct_eq(expected.as_bytes())));
        if matches {
            Ok(())
        } else {
            Err(Denied::WrongToken)
        }
    }

    /// Checks a websocket upgrade's `Origin`: absent (not a browser) or allowed.
    pub(crate) fn check_origin(&self, headers: &HeaderMap) -> Result<(), Denied> {
        let Some(origin) = headers.get(header::ORIGIN) else {
            return Ok(());
        };
        let origin = String::from_utf8_lossy(origin.as_bytes());
        let normalised = normalise_origin(&origin);
        if self.origins.iter().any(|o| o == "*" || *o == normalised) {
            Ok(())
        } else {
            Err(Denied::ForeignOrigin(origin.chars().take(100).collect()))
        }
    }
}

/// An origin as browsers send it: scheme and host in lower case, no trailing `/`.
fn normalise_origin(origin: &str) -> String {
    origin.trim().trim_end_matches('/').to_ascii_lowercase()
}

// The relay's refusals are logged once per burst, as every repeating failure is.
pub(crate) use streamwire_core::log::{BurstLog, more_since};

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn access() -> Access {
        Access::new(
            Some("abc".to_owned()),
            SocketAddr::from(([127, 0, 0, 1], 9090)),
            &["https://app.foxglove.dev/".to_owned()],
        )
    }

    #[test]
    fn a_token_comes_in_the_query_or_as_a_bearer() {
        let access = access();
        let none = HeaderMap::new();
        assert_eq!(access.check_token(None, &none), Err(Denied::MissingToken));
        assert_eq!(
            access.check_token(Some("abd"), &none),
            Err(Denied::WrongToken)
        );
        assert_eq!(
            access.check_token(Some("ab"), &none),
            Err(Denied::WrongToken)
        );
        assert_eq!(access.check_token(Some("abc"), &none), Ok(()));
        let mut bearer = HeaderMap::new();
        bearer.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer abc"),
        );
        assert_eq!(access.check_token(None, &bearer), Ok(()));
        bearer.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic abc"));
        assert_eq!(access.check_token(None, &bearer), Err(Denied::MissingToken));
        let open = Access::new(None, SocketAddr::from(([127, 0, 0, 1], 1)), &[]);
        assert_eq!(open.check_token(None, &none), Ok(()));
    }

    #[test]
    fn origins_are_the_relays_own_and_those_added() {
        let access = access();
        let origin = |o: &'static str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::ORIGIN, HeaderValue::from_static(o));
            access.check_origin(&headers)
        };
        assert_eq!(origin("http://127.0.0.1:9090"), Ok(()));
        assert_eq!(origin("http://LOCALHOST:9090"), Ok(()));
        assert_eq!(origin("https://app.foxglove.dev"), Ok(()));
        assert_eq!(
            origin("http://127.0.0.1:9091"),
            Err(Denied::ForeignOrigin("http://127.0.0.1:9091".to_owned()))
        );
        assert!(origin("http://evil.example").is_err());
        assert!(origin("null").is_err());
        assert_eq!(
            access.check_origin(&HeaderMap::new()),
            Ok(()),
            "not a browser"
        );
    }

    #[test]
    fn tokens_are_written_as_text() {
        assert_eq!(RelayToken::parse("random"), Ok(RelayToken::Random));
        assert_eq!(RelayToken::parse("none"), Ok(RelayToken::Open));
        assert_eq!(
            RelayToken::parse("s3cret-1"),
            Ok(RelayToken::Fixed("s3cret-1".to_owned()))
        );
        assert!(RelayToken::parse("").is_err());
        assert!(RelayToken::parse("a&b").is_err());
        assert_eq!(
            format!("{:?}", RelayToken::parse("s3cret")),
            "Ok(Fixed(..))"
        );
        let token = random_token().expect("the OS gives random bytes");
        assert_eq!(token.len(), 48);
        assert!(token.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(token, random_token().expect("random"));
    }
}
