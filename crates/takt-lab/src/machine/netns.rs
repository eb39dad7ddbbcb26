//! (in progress)
use super::Ctx;

#[allow(dead_code)]
pub(crate) fn run(ctx: &mut Ctx) {
    ctx.skip("netns", "not implemented in this build");
}
