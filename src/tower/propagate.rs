//! `PropagateDeadlineLayer`: the client side of a request's deadline
//! across services, written into each call's headers.
