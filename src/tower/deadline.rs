//! `DeadlineLayer`: the server side of a request's deadline across
//! services, read from its headers.
