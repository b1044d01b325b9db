//! Container tokens' writes: before anything is written, the town says
//! whether the token's container holds it, and with which epoch; every
//! object the request then changes checks that epoch itself, in its own
//! transaction (see `stasis_domain::fence` for the rule and the one window
//! it leaves).

use crate::{Objects, auth::Caller, error::ApiError, route::Endpoint};
use http::Method;
use stasis_domain::{
    fence::{self, Fence},
    operation::town as op,
    town::Standing,
};

/// The fence of a container token's write, or the 409 that refuses it;
/// `None` for every other request. A heartbeat is not fenced: it has its
/// own rule in the town (a superseded container's heartbeat takes nothing
/// over).
pub(crate) async fn fence_of(
    objects: &impl Objects,
    caller: &Caller,
    endpoint: &Endpoint,
    method: &Method,
) -> Result<Option<Fence>, ApiError> {
    let (Some(container_id), Some(town_id)) = (caller.container_id(), endpoint.town()) else {
        return Ok(None);
    };
    if !endpoint.is_fenced(method) {
        return Ok(None);
    }
    let fence = standing(objects, town_id, container_id)
        .await?
        .fence(container_id)?;
    Ok(Some(fence))
}

/// Where `container_id` stands in `town_id`.
pub(crate) async fn standing(
    objects: &impl Objects,
    town_id: &str,
    container_id: &str,
) -> Result<Standing, ApiError> {
    let standing = op::standing(container_id.to_owned());
    Ok(objects.town(town_id, standing).await?)
}

/// A `container_fenced` refusal from an agent names the newest container
/// that wrote to that agent; the town knows the one holding it now.
pub(crate) async fn name_holder(
    objects: &impl Objects,
    caller: &Caller,
    town_id: Option<&str>,
    error: ApiError,
) -> ApiError {
    let (Some(container_id), Some(town_id)) = (caller.container_id(), town_id) else {
        return error;
    };
    if error.code != fence::FENCED {
        return error;
    }
    match standing(objects, town_id, container_id).await {
        Ok(Standing::Superseded {
            current_container_id,
        }) => fence::superseded(container_id, current_container_id.as_deref()).into(),
        _ => error,
    }
}
