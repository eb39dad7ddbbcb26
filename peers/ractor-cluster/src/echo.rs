//! The echo actor node B serves and node A asks.

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use ractor_cluster::RactorClusterMessage;

/// The echo actor's message: a remote-capable call (ractor_cluster
/// serializes both the bytes and the reply over the node session).
#[derive(RactorClusterMessage)]
pub enum EchoMsg {
    /// Answers the bytes themselves.
    #[rpc]
    Echo(Vec<u8>, RpcReplyPort<Vec<u8>>),
}

impl std::fmt::Debug for EchoMsg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EchoMsg::Echo(v, _) => write!(f, "Echo({} bytes)", v.len()),
        }
    }
}

/// Answers every [`EchoMsg::Echo`] with its bytes.
#[derive(Debug)]
pub(crate) struct Echo;

impl Actor for Echo {
    type Msg = EchoMsg;
    type State = ();
    type Arguments = ();

    async fn pre_start(&self, _: ActorRef<EchoMsg>, _: ()) -> Result<(), ActorProcessingErr> {
        Ok(())
    }

    async fn handle(
        &self,
        _: ActorRef<EchoMsg>,
        msg: EchoMsg,
        _: &mut (),
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            // A caller that gave up (timed out) dropped its port: nothing
            // to answer, nothing to report.
            EchoMsg::Echo(v, reply) => {
                let _ = reply.send(v);
            }
        }
        Ok(())
    }
}
