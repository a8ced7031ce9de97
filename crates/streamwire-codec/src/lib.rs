//! Image codec engines (in progress).
