//! Reference tools (in progress).
use super::Ctx;

pub(crate) fn run(ctx: &mut Ctx) {
    ctx.skip("compare", "not implemented in this build");
}
