//! Network peer (in progress).

/// Serves (in progress).
pub fn serve(_addr: &str) -> std::io::Result<()> {
    Err(std::io::Error::other("not yet"))
}
