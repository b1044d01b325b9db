//! An operation: a call that names the type of its reply.
//!
//! An object answers one reply enum per kind of object; a caller, though,
//! always knows which reply its call gets. An [`Operation`] pairs the call
//! with the one reading of the reply that fits it, so that callers get `R`
//! and handle no reply they cannot get. A reply that does not fit is
//! corruption (a [`DomainError::Storage`]), never a caller's concern.
//!
//! This module holds the pairing alone, and the `operations!` macro that
//! writes a table of them: the agent's and the town's tables are in
//! [`crate::operation`], the snapshot steps' beside the sagas that run them
//! ([`crate::snapshot::operations`]).

use crate::DomainError;

/// A call on an object, of type `C`, whose reply (of the object's reply
/// type `Rep`) reads as an `R`.
#[must_use = "an operation does nothing until a runtime runs it"]
pub struct Operation<C, Rep, R> {
    name: &'static str,
    call: C,
    read: Reading<Rep, R>,
}

/// How an [`Operation`]'s reply is read.
type Reading<Rep, R> = Box<dyn FnOnce(Rep) -> Option<R> + Send + Sync>;

/// The second half of an [`Operation`]: what its reply means.
#[must_use = "the reply is read only through this"]
pub struct Answer<Rep, R> {
    name: &'static str,
    read: Reading<Rep, R>,
}

impl<C, Rep: 'static, R: 'static> Operation<C, Rep, R> {
    /// `call`, named `name` in errors, whose reply `read` turns into an `R`
    /// (`None`: the reply does not fit the call).
    pub fn new(name: &'static str, call: C, read: fn(Rep) -> Option<R>) -> Self {
        Self {
            name,
            call,
            read: Box::new(read),
        }
    }

    /// The call, as the object receives it.
    pub fn call(&self) -> &C {
        &self.call
    }

    /// The operation's name (`get_agent`, `heartbeat`, ...).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The call to send, and how to read what comes back.
    pub fn split(self) -> (C, Answer<Rep, R>) {
        let answer = Answer {
            name: self.name,
            read: self.read,
        };
        (self.call, answer)
    }

    /// Runs the call with `deliver` and reads its reply.
    pub fn run_with(
        self,
        deliver: impl FnOnce(C) -> Result<Rep, DomainError>,
    ) -> Result<R, DomainError> {
        let (call, answer) = self.split();
        answer.read(deliver(call)?)
    }

    /// This operation as a step of an enclosing object's call: `wrap` puts
    /// the call inside the outer call, `unwrap` takes the inner reply out of
    /// the outer one (a snapshot step is an agent call).
    pub fn within<C2, Rep2: 'static>(
        self,
        wrap: fn(C) -> C2,
        unwrap: fn(Rep2) -> Option<Rep>,
    ) -> Operation<C2, Rep2, R> {
        let inner = self.read;
        Operation {
            name: self.name,
            call: wrap(self.call),
            read: Box::new(move |reply| unwrap(reply).and_then(inner)),
        }
    }
}

impl<Rep, R> Answer<Rep, R> {
    /// The reply as the operation's result: a reply that does not fit the
    /// call is corruption.
    pub fn read(self, reply: Rep) -> Result<R, DomainError> {
        (self.read)(reply).ok_or_else(|| {
            DomainError::Storage(format!(
                "the object answered {} with a reply of another operation",
                self.name
            ))
        })
    }
}

/// Writes one constructor per operation: its arguments, the call they make,
/// and the reply pattern it reads. The table is the only place a call is
/// paired with its reply.
macro_rules! operations {
    (
        $op:ident<$call:ty, $reply:ty>;
        $(
            $(#[$doc:meta])*
            $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $out:ty
                = $make:expr, $pattern:pat => $value:expr;
        )*
    ) => {
        $(
            $(#[$doc])*
            pub fn $name($($arg: $ty),*) -> $op<$out> {
                $crate::typed_operation::Operation::new(stringify!($name), $make, |reply: $reply| {
                    #[allow(unreachable_patterns, reason = "a reply enum with one variant")]
                    match reply {
                        $pattern => Some($value),
                        _ => None,
                    }
                })
            }
        )*
    };
}
pub(crate) use operations;
