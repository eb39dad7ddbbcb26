// takt-so5-bench: takt's agent benchmarks on SObjectizer 5.8.
//
// A separate executable, so that a crash or a hang of the peer is the
// child's and not takt's: `takt bench agents --peers` runs it, reads one
// line per repetition, and kills it after three times its estimate.
//
//   takt-so5-bench --protocol
//   takt-so5-bench BENCH [--dispatcher D] [--messages N] [--agents N]
//                  [--tokens M] [--groups G] [--leaves L]
//                  [--warmup W] --runs R
//
// Output (stdout, protocol v1): for each timed repetition K = 1..R
//
//   takt-so5 v1 rep=K bench=B dispatcher=D <sizes> <measured>
//
// then `takt-so5 v1 end runs=R`. <sizes> echo the parameters in a fixed
// order per benchmark; <measured> are whole nanoseconds (and skynet's sum),
// followed on every line by `cpu_ns=C`, the CPU time (all threads) the
// repetition cost, its environment's start and stop included:
//
//   ping_pong               messages=N                 ns=T
//   customer_ring           agents=N tokens=M [groups=G] reg_ns=R ns=T
//   skynet                  leaves=L                   ns=T sum=S
//   send_msg                messages=N                 send_ns=T
//   send_and_process_msg    messages=N                 send_ns=T process_ns=P
//   insend_and_process_msg  messages=N                 ns=T
//   process_state_changes   messages=N states=10       send_ns=T process_ns=P
//   send_agents_msg_self    agents=N messages=M        send_ns=T
//
// The definitions are takt's (crates/takt-bench-agents/src/runs.rs) and,
// for the seed's six, the 2006 document's; each run checks its own work
// (deliveries counted, skynet's sum) and a wrong result, a deadline passed
// or a bad argument is a line on stderr and a non-zero exit status:
// 2 bad arguments, 3 a run did not complete in time, 4 a wrong result,
// 5 an exception from SObjectizer.

#include <so_5/all.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <time.h>

namespace {

using clock_type = std::chrono::steady_clock;
using u64 = std::uint64_t;

constexpr const char * PROTOCOL = "takt-so5 v1";

// How long one repetition may take before the driver gives up on it.
constexpr auto RUN_DEADLINE = std::chrono::seconds( 600 );

u64
ns_since( clock_type::time_point t )
{
	return static_cast< u64 >( std::chrono::duration_cast<
			std::chrono::nanoseconds >( clock_type::now() - t ).count() );
}

// CPU time of the whole process, all threads.
u64
process_cpu_ns()
{
	timespec ts{};
	clock_gettime( CLOCK_PROCESS_CPUTIME_ID, &ts );
	return static_cast< u64 >( ts.tv_sec ) * 1000000000ull
			+ static_cast< u64 >( ts.tv_nsec );
}

[[noreturn]] void
die( int code, const std::string & why )
{
	std::fprintf( stderr, "takt-so5-bench: %s\n", why.c_str() );
	std::fflush( stdout );
	std::fflush( stderr );
	// No destructors: a stuck SObjectizer environment would hang in them.
	std::_Exit( code );
}

// A one-shot signal from the environment's threads to the driver.
class latch_t
{
	std::mutex m_lock;
	std::condition_variable m_cv;
	bool m_done = false;

public:
	void
	set()
	{
		{
			std::lock_guard< std::mutex > l{ m_lock };
			m_done = true;
		}
		m_cv.notify_all();
	}

	void
	wait( const char * what )
	{
		std::unique_lock< std::mutex > l{ m_lock };
		if( !m_cv.wait_for( l, RUN_DEADLINE, [this] { return m_done; } ) )
			die( 3, std::string( "run did not complete within 600 s: " ) + what );
		m_done = false;
	}
};

// Counts down; the last hit sets the latch.
class countdown_t
{
	std::atomic< u64 > m_left;

public:
	latch_t latch;

	explicit countdown_t( u64 n ) : m_left{ n } {}

	void
	hit()
	{
		if( m_left.fetch_sub( 1, std::memory_order_acq_rel ) == 1 )
			latch.set();
	}
};

void
expect( const char * bench, const char * what, u64 got, u64 expected )
{
	if( got != expected )
		die( 4, std::string( bench ) + ": " + what + " " + std::to_string( got )
				+ ", expected " + std::to_string( expected ) );
}

// The dispatchers the benchmarks run on.
enum class disp_kind_t { one_thread, active_obj, active_group, thread_pool };

const char *
disp_name( disp_kind_t d )
{
	switch( d )
	{
	case disp_kind_t::one_thread: return "one_thread";
	case disp_kind_t::active_obj: return "active_obj";
	case disp_kind_t::active_group: return "active_group";
	case disp_kind_t::thread_pool: return "thread_pool";
	}
	return "?";
}

// Makes binders for one dispatcher of `kind`; for active_group, agent i
// goes to group i % groups.
class binders_t
{
	disp_kind_t m_kind;
	std::size_t m_groups;
	so_5::disp_binder_shptr_t m_one;
	so_5::disp::active_group::dispatcher_handle_t m_ag;

public:
	binders_t( so_5::environment_t & env, disp_kind_t kind, std::size_t groups )
		: m_kind{ kind }, m_groups{ groups ? groups : 1 }
	{
		switch( kind )
		{
		case disp_kind_t::one_thread:
			m_one = so_5::disp::one_thread::make_dispatcher( env ).binder();
			break;
		case disp_kind_t::active_obj:
			m_one = so_5::disp::active_obj::make_dispatcher( env ).binder();
			break;
		case disp_kind_t::active_group:
			m_ag = so_5::disp::active_group::make_dispatcher( env );
			break;
		case disp_kind_t::thread_pool:
			// Two workers; each agent's demands queued apart (fifo
			// individual), so the pool places the agents.
			m_one = so_5::disp::thread_pool::make_dispatcher( env, 2 ).binder(
					so_5::disp::thread_pool::bind_params_t{}.fifo(
							so_5::disp::thread_pool::fifo_t::individual ) );
			break;
		}
	}

	so_5::disp_binder_shptr_t
	binder( std::size_t i ) const
	{
		if( m_kind == disp_kind_t::active_group )
			return m_ag.binder( "g" + std::to_string( i % m_groups ) );
		return m_one;
	}
};

// ------------------------------------------------------------- ping_pong

struct ball final : public so_5::message_t
{
	u64 m_left;
	explicit ball( u64 left ) : m_left{ left } {}
};

struct set_peer final : public so_5::message_t
{
	so_5::mbox_t m_peer;
	explicit set_peer( so_5::mbox_t p ) : m_peer{ std::move( p ) } {}
};

class player_t final : public so_5::agent_t
{
	so_5::mbox_t m_peer;
	countdown_t & m_started;
	countdown_t & m_done;
	std::atomic< u64 > & m_handled;
	u64 m_count = 0;

public:
	player_t( context_t ctx, countdown_t & started, countdown_t & done,
			std::atomic< u64 > & handled )
		: agent_t{ std::move( ctx ) }
		, m_started{ started }
		, m_done{ done }
		, m_handled{ handled }
	{}

	void
	so_define_agent() override
	{
		so_subscribe_self()
			.event( [this]( mhood_t< set_peer > m ) { m_peer = m->m_peer; } )
			.event( &player_t::on_ball );
	}

	void so_evt_start() override { m_started.hit(); }
	void so_evt_finish() override { m_handled += m_count; }

	void
	on_ball( mhood_t< ball > m )
	{
		++m_count;
		if( m->m_left == 0 )
			m_done.hit();
		else
			so_5::send< ball >( m_peer, m->m_left - 1 );
	}
};

// `messages` deliveries between two agents; ns for the whole exchange,
// timed from the driver's first send to the last delivery.
u64
ping_pong( disp_kind_t disp, u64 messages )
{
	std::atomic< u64 > handled{ 0 };
	countdown_t started{ 2 };
	countdown_t done{ 1 };
	u64 ns = 0;
	{
		so_5::wrapped_env_t sobj;
		auto & env = sobj.environment();
		binders_t b{ env, disp, 0 };
		so_5::mbox_t a, z;
		env.introduce_coop( b.binder( 0 ), [&]( so_5::coop_t & coop ) {
			a = coop.make_agent< player_t >( started, done, handled )->so_direct_mbox();
			z = coop.make_agent< player_t >( started, done, handled )->so_direct_mbox();
		} );
		started.latch.wait( "ping_pong: players starting" );
		so_5::send< set_peer >( a, z );
		so_5::send< set_peer >( z, a );
		const auto t = clock_type::now();
		so_5::send< ball >( a, messages - 1 );
		done.latch.wait( "ping_pong: the last delivery" );
		ns = ns_since( t );
		sobj.stop_then_join();
	}
	expect( "ping_pong", "deliveries handled", handled.load(), messages );
	return ns;
}

// --------------------------------------------------------- customer_ring

struct token final : public so_5::message_t
{
	std::uint32_t m_left;
	explicit token( std::uint32_t left ) : m_left{ left } {}
};

class customer_t final : public so_5::agent_t
{
	so_5::mbox_t m_next;
	countdown_t & m_started;
	countdown_t & m_done;
	std::atomic< u64 > & m_handled;
	u64 m_count = 0;

public:
	customer_t( context_t ctx, so_5::mbox_t next, countdown_t & started,
			countdown_t & done, std::atomic< u64 > & handled )
		: agent_t{ std::move( ctx ) }
		, m_next{ std::move( next ) }
		, m_started{ started }
		, m_done{ done }
		, m_handled{ handled }
	{}

	void
	so_define_agent() override
	{
		so_subscribe_self()
			.event( [this]( mhood_t< set_peer > m ) { m_next = m->m_peer; } )
			.event( &customer_t::on_token );
	}

	void so_evt_start() override { m_started.hit(); }
	void so_evt_finish() override { m_handled += m_count; }

	void
	on_token( mhood_t< token > m )
	{
		++m_count;
		if( m->m_left == 0 )
			m_done.hit();
		else
			so_5::send< token >( m_next, m->m_left - 1 );
	}
};

struct ring_times_t
{
	u64 m_reg_ns;
	u64 m_ns;
};

// `agents` agents in a ring, `tokens` tokens: token j starts at agent
// j*agents/tokens and retires after `agents` hops. Registration runs from
// creating the coop to every agent's so_evt_start; ringing from the first
// injection to the last retirement.
ring_times_t
customer_ring( disp_kind_t disp, u64 agents, u64 tokens, u64 groups )
{
	std::atomic< u64 > handled{ 0 };
	countdown_t started{ agents };
	countdown_t done{ tokens };
	ring_times_t r{ 0, 0 };
	{
		so_5::wrapped_env_t sobj;
		auto & env = sobj.environment();
		binders_t b{ env, disp, groups };
		std::vector< so_5::mbox_t > mboxes( agents );
		const auto t0 = clock_type::now();
		env.introduce_coop( b.binder( 0 ), [&]( so_5::coop_t & coop ) {
			coop.reserve( agents );
			// Last to first, so each agent knows its successor at once.
			so_5::mbox_t next;
			for( u64 i = agents; i-- > 0; )
			{
				auto * a = coop.make_agent_with_binder< customer_t >(
						b.binder( i ), next, started, done, handled );
				mboxes[ i ] = a->so_direct_mbox();
				next = mboxes[ i ];
			}
		} );
		started.latch.wait( "customer_ring: agents starting" );
		r.m_reg_ns = ns_since( t0 );
		so_5::send< set_peer >( mboxes[ agents - 1 ], mboxes[ 0 ] );
		const auto t = clock_type::now();
		for( u64 j = 0; j < tokens; ++j )
			so_5::send< token >( mboxes[ j * agents / tokens ],
					static_cast< std::uint32_t >( agents - 1 ) );
		done.latch.wait( "customer_ring: the last token" );
		r.m_ns = ns_since( t );
		sobj.stop_then_join();
	}
	expect( "customer_ring", "deliveries handled", handled.load(), agents * tokens );
	return r;
}

// ---------------------------------------------------------------- skynet

struct sum_msg final : public so_5::message_t
{
	u64 m_sum;
	explicit sum_msg( u64 s ) : m_sum{ s } {}
};

struct skynet_result_t
{
	countdown_t m_done{ 1 };
	std::atomic< u64 > m_sum{ 0 };
};

class node_t final : public so_5::agent_t
{
	so_5::disp_binder_shptr_t m_binder;
	so_5::mbox_t m_parent;
	skynet_result_t * m_root;
	unsigned m_level;
	unsigned m_levels;
	u64 m_num;
	u64 m_sum = 0;
	unsigned m_replies = 0;
	so_5::coop_handle_t m_children;

public:
	node_t( context_t ctx, so_5::disp_binder_shptr_t binder, so_5::mbox_t parent,
			skynet_result_t * root, unsigned level, unsigned levels, u64 num )
		: agent_t{ std::move( ctx ) }
		, m_binder{ std::move( binder ) }
		, m_parent{ std::move( parent ) }
		, m_root{ root }
		, m_level{ level }
		, m_levels{ levels }
		, m_num{ num }
	{}

	void
	so_define_agent() override
	{
		so_subscribe_self().event( &node_t::on_sum );
	}

	void
	so_evt_start() override
	{
		if( m_level == m_levels )
		{
			m_sum = m_num;
			report();
			return;
		}
		so_5::introduce_child_coop( *this, m_binder, [&]( so_5::coop_t & coop ) {
			m_children = coop.handle();
			coop.reserve( 10 );
			for( u64 k = 0; k < 10; ++k )
				coop.make_agent< node_t >( m_binder, so_direct_mbox(), nullptr,
						m_level + 1, m_levels, m_num * 10 + k );
		} );
	}

	void
	on_sum( mhood_t< sum_msg > m )
	{
		m_sum += m->m_sum;
		if( ++m_replies == 10 )
		{
			so_environment().deregister_coop( m_children, so_5::dereg_reason::normal );
			report();
		}
	}

private:
	void
	report()
	{
		if( m_root )
		{
			m_root->m_sum = m_sum;
			m_root->m_done.hit();
		}
		else
			so_5::send< sum_msg >( m_parent, m_sum );
	}
};

// The skynet tree over `leaves` (a power of ten) on one dispatcher: ns
// from registering the root to the root's sum, and the sum.
std::pair< u64, u64 >
skynet( disp_kind_t disp, u64 leaves )
{
	unsigned levels = 0;
	for( u64 n = leaves; n > 1; n /= 10 )
		++levels;
	skynet_result_t result;
	u64 ns = 0;
	{
		so_5::wrapped_env_t sobj;
		auto & env = sobj.environment();
		binders_t b{ env, disp, 0 };
		auto binder = b.binder( 0 );
		const auto t = clock_type::now();
		env.introduce_coop( binder, [&]( so_5::coop_t & coop ) {
			coop.make_agent< node_t >( binder, so_5::mbox_t{}, &result, 0u, levels, 0u );
		} );
		result.m_done.latch.wait( "skynet: the root's sum" );
		ns = ns_since( t );
		sobj.stop_then_join();
	}
	const u64 sum = result.m_sum.load();
	expect( "skynet", "sum", sum, leaves * ( leaves - 1 ) / 2 );
	return { ns, sum };
}

// ------------------------------------------------ the seed's single agent

struct go final : public so_5::signal_t {};

struct item final : public so_5::message_t
{
	u64 m_k;
	explicit item( u64 k ) : m_k{ k } {}
};

// Sent to its own agent, which has no handler for it.
struct unwanted final : public so_5::message_t
{
	u64 m_k;
	explicit unwanted( u64 k ) : m_k{ k } {}
};

enum class flood_mode_t { send_only, send_and_process };

struct phase_times_t
{
	u64 m_send_ns = 0;
	u64 m_process_ns = 0;
};

class flood_t final : public so_5::agent_t
{
	const flood_mode_t m_mode;
	const u64 m_n;
	u64 m_processed = 0;
	phase_times_t & m_times;
	countdown_t & m_done;
	clock_type::time_point m_sent;

public:
	flood_t( context_t ctx, flood_mode_t mode, u64 n, phase_times_t & times,
			countdown_t & done )
		: agent_t{ std::move( ctx ) }
		, m_mode{ mode }
		, m_n{ n }
		, m_times{ times }
		, m_done{ done }
	{}

	void
	so_define_agent() override
	{
		so_subscribe_self().event( &flood_t::on_go ).event( &flood_t::on_item );
	}

	void
	on_go( mhood_t< go > )
	{
		const auto t = clock_type::now();
		const auto & self = so_direct_mbox();
		if( m_mode == flood_mode_t::send_only )
			for( u64 i = 0; i < m_n; ++i )
				so_5::send< unwanted >( self, i );
		else
			for( u64 i = 0; i < m_n; ++i )
				so_5::send< item >( self, i );
		m_times.m_send_ns = ns_since( t );
		m_sent = clock_type::now();
		if( m_mode == flood_mode_t::send_only )
			m_done.hit();
	}

	void
	on_item( mhood_t< item > )
	{
		if( ++m_processed == m_n )
		{
			m_times.m_process_ns = ns_since( m_sent );
			m_done.hit();
		}
	}
};

// The seed's send_msg (`send_only`: messages nobody handles; the sends
// timed) and send_and_process_msg (sends timed, then the processing).
phase_times_t
flood( flood_mode_t mode, u64 n )
{
	phase_times_t times;
	countdown_t done{ 1 };
	{
		so_5::wrapped_env_t sobj;
		auto & env = sobj.environment();
		binders_t b{ env, disp_kind_t::one_thread, 0 };
		so_5::mbox_t a;
		env.introduce_coop( b.binder( 0 ), [&]( so_5::coop_t & coop ) {
			a = coop.make_agent< flood_t >( mode, n, times, done )->so_direct_mbox();
		} );
		so_5::send< go >( a );
		done.latch.wait( "flood: the last message" );
		sobj.stop_then_join();
	}
	return times;
}

// ------------------------------------------------ insend_and_process_msg

// SObjectizer 5 has no insend events (4.4's events handled before
// send_msg returns). Their equivalent here: an event queue that runs each
// demand inside push(), i.e. inside the sender's send, on the sender's
// thread; every other part of the path (the message, the mbox, the
// subscription lookup, the handler call) is SObjectizer's own. The agent's
// first and last demands (evt_start, evt_finish) go to a thread of the
// queue's own, so registration and deregistration never run inside the
// caller; the benchmark sends only after evt_start has run and stops
// sending before deregistration, so no two demands of the agent overlap.
class inline_queue_t final : public so_5::event_queue_t
{
	std::mutex m_lock;
	std::condition_variable m_cv;
	std::deque< so_5::execution_demand_t > m_lifecycle;
	bool m_stop = false;
	std::thread m_thread;

public:
	inline_queue_t()
		: m_thread{ [this] { lifecycle_loop(); } }
	{}

	~inline_queue_t() override
	{
		{
			std::lock_guard< std::mutex > l{ m_lock };
			m_stop = true;
		}
		m_cv.notify_all();
		m_thread.join();
	}

	void
	push( so_5::execution_demand_t demand ) override
	{
		demand.call_handler( so_5::query_current_thread_id() );
	}

	void
	push_evt_start( so_5::execution_demand_t demand ) override
	{
		lifecycle( std::move( demand ) );
	}

	void
	push_evt_finish( so_5::execution_demand_t demand ) noexcept override
	{
		lifecycle( std::move( demand ) );
	}

private:
	void
	lifecycle( so_5::execution_demand_t demand )
	{
		{
			std::lock_guard< std::mutex > l{ m_lock };
			m_lifecycle.push_back( std::move( demand ) );
		}
		m_cv.notify_all();
	}

	void
	lifecycle_loop()
	{
		const auto id = so_5::query_current_thread_id();
		std::unique_lock< std::mutex > l{ m_lock };
		for( ;; )
		{
			m_cv.wait( l, [this] { return m_stop || !m_lifecycle.empty(); } );
			if( m_lifecycle.empty() )
				return;
			auto d = std::move( m_lifecycle.front() );
			m_lifecycle.pop_front();
			l.unlock();
			d.call_handler( id );
			l.lock();
		}
	}
};

// Binds agents to one inline_queue_t.
class inline_binder_t final : public so_5::disp_binder_t
{
	std::shared_ptr< inline_queue_t > m_queue;

public:
	explicit inline_binder_t( std::shared_ptr< inline_queue_t > q )
		: m_queue{ std::move( q ) }
	{}

	void preallocate_resources( so_5::agent_t & ) override {}
	void undo_preallocation( so_5::agent_t & ) noexcept override {}
	void bind( so_5::agent_t & a ) noexcept override { a.so_bind_to_dispatcher( *m_queue ); }
	void unbind( so_5::agent_t & ) noexcept override {}
};

class sink_t final : public so_5::agent_t
{
	countdown_t & m_started;
	u64 & m_seen;

public:
	sink_t( context_t ctx, countdown_t & started, u64 & seen )
		: agent_t{ std::move( ctx ) }, m_started{ started }, m_seen{ seen }
	{}

	void so_define_agent() override { so_subscribe_self().event( &sink_t::on_item ); }
	void so_evt_start() override { m_started.hit(); }
	void on_item( mhood_t< item > ) { ++m_seen; }
};

class insender_t final : public so_5::agent_t
{
	const u64 m_n;
	so_5::mbox_t m_sink;
	u64 & m_ns;
	countdown_t & m_started;
	countdown_t & m_done;

public:
	insender_t( context_t ctx, u64 n, so_5::mbox_t sink, u64 & ns,
			countdown_t & started, countdown_t & done )
		: agent_t{ std::move( ctx ) }
		, m_n{ n }
		, m_sink{ std::move( sink ) }
		, m_ns{ ns }
		, m_started{ started }
		, m_done{ done }
	{}

	void so_define_agent() override { so_subscribe_self().event( &insender_t::on_go ); }
	void so_evt_start() override { m_started.hit(); }

	void
	on_go( mhood_t< go > )
	{
		const auto t = clock_type::now();
		for( u64 i = 0; i < m_n; ++i )
			so_5::send< item >( m_sink, i );
		m_ns = ns_since( t );
		m_done.hit();
	}
};

// The seed's insend_and_process_msg: an agent on a one_thread dispatcher
// sends `n` messages to a sink whose demands run inside the send; ns for
// the n sends (each with its handling).
u64
insend_and_process_msg( u64 n )
{
	u64 ns = 0;
	u64 seen = 0;
	countdown_t started{ 2 };
	countdown_t done{ 1 };
	{
		so_5::wrapped_env_t sobj;
		auto & env = sobj.environment();
		binders_t b{ env, disp_kind_t::one_thread, 0 };
		auto q = std::make_shared< inline_queue_t >();
		so_5::mbox_t sender;
		env.introduce_coop( b.binder( 0 ), [&]( so_5::coop_t & coop ) {
			auto * s = coop.make_agent_with_binder< sink_t >(
					std::make_shared< inline_binder_t >( q ), started, seen );
			sender = coop.make_agent< insender_t >(
					n, s->so_direct_mbox(), ns, started, done )->so_direct_mbox();
		} );
		started.latch.wait( "insend_and_process_msg: agents starting" );
		so_5::send< go >( sender );
		done.latch.wait( "insend_and_process_msg: the last send" );
		sobj.stop_then_join();
	}
	expect( "insend_and_process_msg", "messages handled inside their send", seen, n );
	return ns;
}

// ------------------------------------------------- process_state_changes

// The one message type; the agent has a handler for it in each of its ten
// states, and each handler moves the agent to the next state.
struct tick final : public so_5::signal_t {};

constexpr unsigned STATES = 10;

class stately_t final : public so_5::agent_t
{
	state_t m_s0{ this, "s0" }, m_s1{ this, "s1" }, m_s2{ this, "s2" },
		m_s3{ this, "s3" }, m_s4{ this, "s4" }, m_s5{ this, "s5" },
		m_s6{ this, "s6" }, m_s7{ this, "s7" }, m_s8{ this, "s8" },
		m_s9{ this, "s9" };
	const state_t * m_states[ STATES ] = {
		&m_s0, &m_s1, &m_s2, &m_s3, &m_s4, &m_s5, &m_s6, &m_s7, &m_s8, &m_s9 };
	const u64 m_n;
	u64 m_processed = 0;
	phase_times_t & m_times;
	countdown_t & m_done;
	clock_type::time_point m_sent;

public:
	stately_t( context_t ctx, u64 n, phase_times_t & times, countdown_t & done )
		: agent_t{ std::move( ctx ) }, m_n{ n }, m_times{ times }, m_done{ done }
	{}

	void
	so_define_agent() override
	{
		so_subscribe_self().event( &stately_t::on_go );
		so_subscribe_self().in( m_s0 ).event( &stately_t::on_tick< 0 > );
		so_subscribe_self().in( m_s1 ).event( &stately_t::on_tick< 1 > );
		so_subscribe_self().in( m_s2 ).event( &stately_t::on_tick< 2 > );
		so_subscribe_self().in( m_s3 ).event( &stately_t::on_tick< 3 > );
		so_subscribe_self().in( m_s4 ).event( &stately_t::on_tick< 4 > );
		so_subscribe_self().in( m_s5 ).event( &stately_t::on_tick< 5 > );
		so_subscribe_self().in( m_s6 ).event( &stately_t::on_tick< 6 > );
		so_subscribe_self().in( m_s7 ).event( &stately_t::on_tick< 7 > );
		so_subscribe_self().in( m_s8 ).event( &stately_t::on_tick< 8 > );
		so_subscribe_self().in( m_s9 ).event( &stately_t::on_tick< 9 > );
	}

	void
	on_go( mhood_t< go > )
	{
		const auto t = clock_type::now();
		const auto & self = so_direct_mbox();
		for( u64 i = 0; i < m_n; ++i )
			so_5::send< tick >( self );
		m_times.m_send_ns = ns_since( t );
		// The ticks queued behind this handler find the agent in s0.
		this >>= m_s0;
		m_sent = clock_type::now();
	}

	template< unsigned I >
	void
	on_tick( mhood_t< tick > )
	{
		this >>= *m_states[ ( I + 1 ) % STATES ];
		if( ++m_processed == m_n )
		{
			m_times.m_process_ns = ns_since( m_sent );
			m_done.hit();
		}
	}
};

phase_times_t
process_state_changes( u64 n )
{
	phase_times_t times;
	countdown_t done{ 1 };
	{
		so_5::wrapped_env_t sobj;
		auto & env = sobj.environment();
		binders_t b{ env, disp_kind_t::one_thread, 0 };
		so_5::mbox_t a;
		env.introduce_coop( b.binder( 0 ), [&]( so_5::coop_t & coop ) {
			a = coop.make_agent< stately_t >( n, times, done )->so_direct_mbox();
		} );
		so_5::send< go >( a );
		done.latch.wait( "process_state_changes: the last tick" );
		sobj.stop_then_join();
	}
	return times;
}

// -------------------------------------------------- send_agents_msg_self

struct member_shared_t
{
	std::atomic< u64 > m_items_left;
	countdown_t m_started;
	countdown_t m_done{ 1 };
	u64 m_send_ns = 0;

	member_shared_t( u64 agents, u64 messages )
		: m_items_left{ messages }, m_started{ agents + 1 }
	{}
};

class member_t final : public so_5::agent_t
{
	member_shared_t & m_shared;

public:
	member_t( context_t ctx, member_shared_t & shared )
		: agent_t{ std::move( ctx ) }, m_shared{ shared }
	{}

	void so_define_agent() override { so_subscribe_self().event( &member_t::on_item ); }
	void so_evt_start() override { m_shared.m_started.hit(); }

	void
	on_item( mhood_t< item > )
	{
		if( m_shared.m_items_left.fetch_sub( 1, std::memory_order_relaxed ) == 1 )
			m_shared.m_done.hit();
	}
};

// Sends the M messages, one to each randomly chosen agent, from its
// handler; the sends alone are timed.
class starter_t final : public so_5::agent_t
{
	std::vector< so_5::mbox_t > m_targets;
	member_shared_t & m_shared;

public:
	starter_t( context_t ctx, member_shared_t & shared )
		: agent_t{ std::move( ctx ) }, m_shared{ shared }
	{}

	void set_targets( std::vector< so_5::mbox_t > t ) { m_targets = std::move( t ); }
	void so_define_agent() override { so_subscribe_self().event( &starter_t::on_go ); }
	void so_evt_start() override { m_shared.m_started.hit(); }

	void
	on_go( mhood_t< go > )
	{
		const auto t = clock_type::now();
		for( const auto & m : m_targets )
			so_5::send< item >( m, 0u );
		m_shared.m_send_ns = ns_since( t );
	}
};

// The seed's send_agents_msg_self: N agents registered, M messages sent to
// randomly chosen agents; ns for the M sends.
u64
send_agents_msg_self( u64 agents, u64 messages )
{
	member_shared_t shared{ agents, messages };
	// xorshift: the same fixed sequence as takt's side.
	u64 x = 0x9E3779B97F4A7C15ull;
	auto next = [&x]( u64 n ) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		return x % n;
	};
	{
		so_5::wrapped_env_t sobj;
		auto & env = sobj.environment();
		binders_t b{ env, disp_kind_t::one_thread, 0 };
		so_5::mbox_t starter;
		env.introduce_coop( b.binder( 0 ), [&]( so_5::coop_t & coop ) {
			coop.reserve( agents + 1 );
			std::vector< so_5::mbox_t > all( agents );
			for( u64 i = 0; i < agents; ++i )
				all[ i ] = coop.make_agent< member_t >( shared )->so_direct_mbox();
			std::vector< so_5::mbox_t > targets( messages );
			for( u64 i = 0; i < messages; ++i )
				targets[ i ] = all[ next( agents ) ];
			auto * s = coop.make_agent< starter_t >( shared );
			s->set_targets( std::move( targets ) );
			starter = s->so_direct_mbox();
		} );
		shared.m_started.latch.wait( "send_agents_msg_self: agents starting" );
		so_5::send< go >( starter );
		shared.m_done.latch.wait( "send_agents_msg_self: the last delivery" );
		sobj.stop_then_join();
	}
	return shared.m_send_ns;
}

// ------------------------------------------------------------------ main

struct args_t
{
	std::string m_bench;
	disp_kind_t m_disp = disp_kind_t::one_thread;
	u64 m_messages = 0;
	u64 m_agents = 0;
	u64 m_tokens = 0;
	u64 m_groups = 0;
	u64 m_leaves = 0;
	u64 m_warmup = 1;
	u64 m_runs = 0;
};

const char * const USAGE =
	"usage: takt-so5-bench --protocol\n"
	"       takt-so5-bench BENCH [--dispatcher one_thread|active_obj|active_group|thread_pool]\n"
	"                      [--messages N] [--agents N] [--tokens M] [--groups G]\n"
	"                      [--leaves L] [--warmup W] --runs R\n"
	"BENCH: ping_pong customer_ring skynet send_msg send_and_process_msg\n"
	"       insend_and_process_msg process_state_changes send_agents_msg_self";

[[noreturn]] void
bad_args( const std::string & why )
{
	die( 2, why + "\n" + USAGE );
}

u64
parse_u64( const char * flag, const char * v )
{
	if( !v || !*v )
		bad_args( std::string( flag ) + " needs a value" );
	for( const char * p = v; *p; ++p )
		if( *p < '0' || *p > '9' )
			bad_args( std::string( flag ) + ": not a whole number: " + v );
	errno = 0;
	const auto n = std::strtoull( v, nullptr, 10 );
	if( errno )
		bad_args( std::string( flag ) + ": out of range: " + v );
	return n;
}

args_t
parse( int argc, char ** argv )
{
	args_t a;
	if( argc < 2 )
		bad_args( "no benchmark given" );
	a.m_bench = argv[ 1 ];
	for( int i = 2; i < argc; ++i )
	{
		const std::string f = argv[ i ];
		const char * v = i + 1 < argc ? argv[ i + 1 ] : nullptr;
		++i;
		if( f == "--dispatcher" )
		{
			const std::string d = v ? v : "";
			if( d == "one_thread" ) a.m_disp = disp_kind_t::one_thread;
			else if( d == "active_obj" ) a.m_disp = disp_kind_t::active_obj;
			else if( d == "active_group" ) a.m_disp = disp_kind_t::active_group;
			else if( d == "thread_pool" ) a.m_disp = disp_kind_t::thread_pool;
			else bad_args( "unknown dispatcher: " + d );
		}
		else if( f == "--messages" ) a.m_messages = parse_u64( "--messages", v );
		else if( f == "--agents" ) a.m_agents = parse_u64( "--agents", v );
		else if( f == "--tokens" ) a.m_tokens = parse_u64( "--tokens", v );
		else if( f == "--groups" ) a.m_groups = parse_u64( "--groups", v );
		else if( f == "--leaves" ) a.m_leaves = parse_u64( "--leaves", v );
		else if( f == "--warmup" ) a.m_warmup = parse_u64( "--warmup", v );
		else if( f == "--runs" ) a.m_runs = parse_u64( "--runs", v );
		else bad_args( "unknown argument: " + f );
	}
	if( a.m_runs == 0 )
		bad_args( "--runs must be at least 1" );
	return a;
}

bool
power_of_ten( u64 n )
{
	if( n < 10 )
		return false;
	while( n % 10 == 0 )
		n /= 10;
	return n == 1;
}

// Checks the sizes BENCH needs; returns the canonical echo of its
// parameters, and the function that runs one repetition and returns its
// measured fields.
std::pair< std::string, std::function< std::string() > >
plan( const args_t & a )
{
	const std::string d = std::string( "dispatcher=" ) + disp_name( a.m_disp );
	auto one_thread_only = [&] {
		if( a.m_disp != disp_kind_t::one_thread )
			bad_args( a.m_bench + " runs on one_thread only" );
	};
	auto need = [&]( bool ok, const char * what ) {
		if( !ok )
			bad_args( a.m_bench + " needs " + what );
	};
	const auto n = std::to_string( a.m_messages );
	if( a.m_bench == "ping_pong" )
	{
		need( a.m_messages >= 1, "--messages >= 1" );
		need( a.m_disp != disp_kind_t::active_group, "one_thread, active_obj or thread_pool" );
		return { d + " messages=" + n, [a] {
			return "ns=" + std::to_string( ping_pong( a.m_disp, a.m_messages ) );
		} };
	}
	if( a.m_bench == "customer_ring" )
	{
		need( a.m_agents >= 1 && a.m_agents <= 0xFFFFFFFFull, "1 <= --agents < 2^32" );
		need( a.m_tokens >= 1 && a.m_tokens <= a.m_agents, "1 <= --tokens <= --agents" );
		need( a.m_disp != disp_kind_t::thread_pool, "one_thread, active_obj or active_group" );
		std::string echo = d + " agents=" + std::to_string( a.m_agents )
				+ " tokens=" + std::to_string( a.m_tokens );
		if( a.m_disp == disp_kind_t::active_group )
		{
			need( a.m_groups >= 1, "--groups >= 1 on active_group" );
			echo += " groups=" + std::to_string( a.m_groups );
		}
		return { echo, [a] {
			const auto r = customer_ring( a.m_disp, a.m_agents, a.m_tokens, a.m_groups );
			return "reg_ns=" + std::to_string( r.m_reg_ns ) + " ns=" + std::to_string( r.m_ns );
		} };
	}
	if( a.m_bench == "skynet" )
	{
		one_thread_only();
		need( power_of_ten( a.m_leaves ), "--leaves a power of ten, at least 10" );
		return { d + " leaves=" + std::to_string( a.m_leaves ), [a] {
			const auto r = skynet( a.m_disp, a.m_leaves );
			return "ns=" + std::to_string( r.first ) + " sum=" + std::to_string( r.second );
		} };
	}
	if( a.m_bench == "send_msg" || a.m_bench == "send_and_process_msg"
			|| a.m_bench == "insend_and_process_msg"
			|| a.m_bench == "process_state_changes" )
	{
		one_thread_only();
		need( a.m_messages >= 1, "--messages >= 1" );
		if( a.m_bench == "send_msg" )
			return { d + " messages=" + n, [a] {
				return "send_ns=" + std::to_string(
						flood( flood_mode_t::send_only, a.m_messages ).m_send_ns );
			} };
		if( a.m_bench == "send_and_process_msg" )
			return { d + " messages=" + n, [a] {
				const auto t = flood( flood_mode_t::send_and_process, a.m_messages );
				return "send_ns=" + std::to_string( t.m_send_ns )
						+ " process_ns=" + std::to_string( t.m_process_ns );
			} };
		if( a.m_bench == "insend_and_process_msg" )
			return { d + " messages=" + n, [a] {
				return "ns=" + std::to_string( insend_and_process_msg( a.m_messages ) );
			} };
		return { d + " messages=" + n + " states=10", [a] {
			const auto t = process_state_changes( a.m_messages );
			return "send_ns=" + std::to_string( t.m_send_ns )
					+ " process_ns=" + std::to_string( t.m_process_ns );
		} };
	}
	if( a.m_bench == "send_agents_msg_self" )
	{
		one_thread_only();
		need( a.m_agents >= 1 && a.m_messages >= 1, "--agents >= 1 and --messages >= 1" );
		return { d + " agents=" + std::to_string( a.m_agents ) + " messages=" + n, [a] {
			return "send_ns=" + std::to_string(
					send_agents_msg_self( a.m_agents, a.m_messages ) );
		} };
	}
	bad_args( "unknown benchmark: " + a.m_bench );
}

} /* namespace */

int
main( int argc, char ** argv )
{
	if( argc == 2 && std::strcmp( argv[ 1 ], "--protocol" ) == 0 )
	{
		std::printf( "%s\n", PROTOCOL );
		return 0;
	}
	const args_t a = parse( argc, argv );
	const auto p = plan( a );
	try
	{
		for( u64 w = 0; w < a.m_warmup; ++w )
			p.second();
		for( u64 k = 1; k <= a.m_runs; ++k )
		{
			const auto c0 = process_cpu_ns();
			const auto measured = p.second();
			const auto cpu = process_cpu_ns() - c0;
			std::printf( "%s rep=%llu bench=%s %s %s cpu_ns=%llu\n", PROTOCOL,
					static_cast< unsigned long long >( k ), a.m_bench.c_str(),
					p.first.c_str(), measured.c_str(),
					static_cast< unsigned long long >( cpu ) );
			std::fflush( stdout );
		}
	}
	catch( const std::exception & e )
	{
		die( 5, a.m_bench + ": " + e.what() );
	}
	std::printf( "%s end runs=%llu\n", PROTOCOL,
			static_cast< unsigned long long >( a.m_runs ) );
	return 0;
}
