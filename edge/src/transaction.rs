//! Durable Object SQL forbids BEGIN and SAVEPOINT; a call is made atomic
//! by running it inside `ctx.storage.transactionSync`.

use js_sys::{Function, Reflect};
use stasis_domain::DomainError;
use std::{cell::RefCell, rc::Rc};
use wasm_bindgen::{JsCast, JsValue, closure::Closure};

/// Runs `f` inside `ctx.storage.transactionSync`, which rolls back every
/// write when its callback throws; an `Err` from `f` is turned into a throw.
pub fn atomically<T: 'static>(
    storage: &JsValue,
    f: impl FnOnce() -> std::result::Result<T, DomainError> + 'static,
) -> std::result::Result<T, DomainError> {
    let outcome: Rc<RefCell<Option<std::result::Result<T, DomainError>>>> = Rc::default();
    let slot = Rc::clone(&outcome);
    let mut f = Some(f);
    let body = Closure::<dyn FnMut() -> std::result::Result<JsValue, JsValue>>::new(move || {
        let Some(f) = f.take() else {
            return Ok(JsValue::UNDEFINED);
        };
        let result = f();
        let failed = result.is_err();
        *slot.borrow_mut() = Some(result);
        if failed {
            Err(JsValue::from_str("stasis: refused, rolling back"))
        } else {
            Ok(JsValue::UNDEFINED)
        }
    });
    let transaction_sync = Reflect::get(storage, &JsValue::from_str("transactionSync"))
        .ok()
        .and_then(|f| f.dyn_into::<Function>().ok());
    let Some(transaction_sync) = transaction_sync else {
        return Err(DomainError::Storage(
            "ctx.storage.transactionSync is missing".into(),
        ));
    };
    let thrown = transaction_sync.call1(storage, body.as_ref()).err();
    let result = outcome.borrow_mut().take();
    match (result, thrown) {
        (Some(result), _) => result,
        (None, Some(err)) => Err(DomainError::Storage(format!("transaction failed: {err:?}"))),
        (None, None) => Err(DomainError::Storage("the transaction did not run".into())),
    }
}
