//! gRPC's timeout format (`grpc-timeout`): read and written, for the
//! deadline layers of both sides.
