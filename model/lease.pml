/*
 * lease.pml -- Promela model of the pd-connector lease protocol (DESIGN.md sections 2-4, rules L1-L9).
 * Run everything with: bash model/check.sh   (README.md: what is modelled, properties, results)
 *
 * Processes: LeaseScheduler (P's step loop: LeaseTable, SlotPool, NonceSource, BlockPool, the expiry
 * reaper, heartbeats, finished-sending collection; in CFG_GRANT grants, commits and reclaims instead of
 * prefills), PRank(r) (P worker rank r: applies the step's slot writes/clears, counts notifications),
 * DReader (D's pull loop: start, decide, notify), DRank(r) (D rank r: block READs and slot READ from P
 * rank r), Router (request-id reuse), Restart (one P restart), Engine (CFG_GRANT: bind, copy, params,
 * commit).
 * Request-id reuse as in LeaseScheduler.schedule: P refuses an id while its previous lease is in the table
 * (any state before FREED), so a1 waits until a0 is FREED or dropped by a restart (the router retrying).
 * An abort does what expiry does, and a prefill's lease can be aborted only once exported, where it may
 * already expire at any moment: aborts are not modelled separately.
 * No clocks: an EXPORTED lease may expire at any moment; a heartbeat only matters through rule L8.
 *
 * Attempts: a0 = request 0 attempt 1, a1 = request 0 attempt 2 (same id), a2 = request 1 attempt 1.
 * Data: a block holds CONTENT(a) of the attempt that wrote it, or FLOOD (another prompt's bytes).
 * Fixed bounds: 2 P ranks, 2 D ranks (D rank r reads P rank r: consumers = 1 per P rank), 3 P blocks,
 * 1 block per request, 1 heartbeat per pull, notifications late and in any order.
 *
 * Configurations (one per run; together they are the full check):
 *   CFG_REUSE   (default) a0, then a1 with the same request id (once a0 is freed); 2 slots, 2 D blocks;
 *               one notification may be duplicated; one slot READ may fail
 *   CFG_RESTART a0, then a1 with the same request id (once a0 is freed or dropped); 2 slots, 2 D blocks;
 *               one P restart at any moment
 *   CFG_TWO     a0 and a2 (two request ids) at once; 2 slots, 2 D blocks; one slot READ may fail
 *   CFG_SCARCE  as CFG_TWO with 1 slot and 1 D block: no lease fields, slot reuse and D block reuse
 * All three attempts in one model is too large to check in minutes (an exhaustive run of a0+a1+a2 stored
 * 33 million states in 5.5 minutes and did not finish).
 *
 *   CFG_LIFE    a0 alone, with a clock: ticks, D heartbeating a0 every tick while its pull waits, and the
 *               lease's maximum lifetime (L12); expiry still may come at any moment, at the latest at exp
 *   CFG_GRANT   the engine path (issue 23): P grants the engine g0 (a block and a slot, its nonce written
 *               on every P rank before the grant is answered) and g1 (a block, no slot); the engine binds
 *               a0 to g0's block and slot, copies its KV, hands the params to D, then sends its commit,
 *               which P applies late or never (the engine died); a grant closes (expires or is returned)
 *               at any moment; D may read, decide and notify before the commit, P keeps such early reads
 *               for the commit; a peer holding a0's nonce under request 1's id sends one read. 1 slot,
 *               1 D block, no heartbeats.
 * CFG_REUSE, CFG_RESTART and CFG_SCARCE also let D end one pull early (a timeout, an abort, its producer
 * gone) while its block READs may be in flight (L13); CFG_REUSE also has a forger that knows request 0's
 * id, not its nonce, and sends P one read notification <req>:1 without a nonce (L11).
 *
 * Mutations: -DMUT_L1 ... -DMUT_L9 (and MUT_L2B, MUT_L6B, MUT_L8B), MUT_L11, MUT_L12, MUT_L12B, MUT_L13
 * each remove one rule; MUT_G1 ... MUT_G7 one guard of the engine path (CFG_GRANT: G1-G5 of issue 23,
 * G6 the engine's deadline for a grant, G7 the refusal of a commit to a closed grant); see README.md.
 * Other switches: -DLAZY_FLOOD (freed blocks are rewritten at any later time, instead of at once),
 * -DSANITY (model self-checks), -DNO_SPURIOUS_CHECK (drops the no_spurious_decline assertion, to see what
 * else a mutation breaks).
 */

#if defined(CFG_RESTART)
#define WITH_REUSE
#define WITH_RESTART
#define WITH_ABORT
#elif defined(CFG_LIFE)
#define WITH_TIME
#elif defined(CFG_TWO)
#define WITH_TWO
#define WITH_FAIL
#elif defined(CFG_GRANT)
#define WITH_GRANT
#define NS  1
#define NDB 1
#elif defined(CFG_SCARCE)
#define WITH_TWO
#define WITH_FAIL
#define WITH_ABORT
#define NS  1
#define NDB 1
#else
#define WITH_REUSE
#define WITH_DUP
#define WITH_FAIL
#define WITH_ABORT
#define WITH_FORGE
#endif

#ifdef WITH_TIME
#define LEASE_T 3    /* a lease's first expiry: export + 3 ticks (30 s in the Java replay: 1 tick = 10 s) */
#define EXT_T   2    /* a heartbeat extends to now + 2 ticks (2/3 of the lease) */
#define MAX_T   4    /* maximum lifetime: export + 4 ticks, whatever the heartbeats (L12) */
#define NT      6    /* ticks in a run */
#endif

#define NA    3      /* attempts */
#define NR    2      /* P ranks = D ranks */
#define NB    3      /* P KV blocks */
#ifndef NS
#define NS    2      /* lease slots per P rank */
#endif
#ifndef NDB
#define NDB   2      /* D KV blocks */
#endif
#define NONE  255
#define FLOOD 9      /* bytes of some other prompt */

#define REQ(a)     ((a) == 2 -> 1 : 0)
#define ATT(a)     ((a) == 1 -> 2 : 1)
#define CONTENT(a) ((a) + 1)
#define IX(a, r)   ((a) * NR + (r))

mtype = { RESERVED, SLOT_WRITTEN, EXPORTED, RELEASING, FREED,          /* lease states on P */
          QUEUED, READING, CHECKING_SLOTS, RECEIVED, DECLINED,         /* pull states on D  */
          lease_mismatch, slot_read_failed, no_lease, ended };         /* decline reasons (ended: timeout,
                                                                          abort or producer gone) */

/* ------------------------------------------------------------------ P --- */
typedef BlockPoolT {
  byte owner[NB];          /* attempt holding the block, NONE = free */
  byte content[NB]         /* CONTENT(a) of the writer, FLOOD, or 0 */
};
typedef SlotPoolT {
  bit  free[NS];           /* slot index is in the free pool */
  byte mem[NR * NS]        /* the registered int64 slots: mem[r*NS + s] on P rank r */
};
typedef NonceSourceT {
  byte epoch;              /* persistent high bits, bumped by every restart */
  byte seq                 /* low bits, restart from 0 in every incarnation */
};
typedef LeaseT {
  mtype state;             /* 0 = not in the table */
  byte  slot;              /* lease fields exported in kv_transfer_params (NONE = no lease fields) */
  byte  nonce;
  byte  blk;
  bit   lost               /* ended by expiry (an abort is one) or restart: a decline is then legitimate */
};

#if NS > 1
#define SLOTS_FREE     SlotPool.free[0] = 1; SlotPool.free[1] = 1
#define ALL_SLOTS_FREE (SlotPool.free[0] && SlotPool.free[1])
#else
#define SLOTS_FREE     SlotPool.free[0] = 1
#define ALL_SLOTS_FREE (SlotPool.free[0])
#endif

#if NDB > 1
#define D_BLOCK_FREE (dOwner[0] == NONE || dOwner[1] == NONE)
#define ALL_D_FREE   (dOwner[0] == NONE && dOwner[1] == NONE)
#else
#define D_BLOCK_FREE (dOwner[0] == NONE)
#define ALL_D_FREE   (dOwner[0] == NONE)
#endif

BlockPoolT   BlockPool;
SlotPoolT    SlotPool;
NonceSourceT NonceSource;
LeaseT       LeaseTable[NA];
byte         byId[2];      /* LeaseTable index by request id: the id's latest attempt */

/* per (attempt, P rank): the step's slot ops and the worker's view */
bit wpend[NA * NR];        /* slot write (nonce) pending on the worker */
bit cpend[NA * NR];        /* slot clear (expiry) pending on the worker */
bit wlive[NA * NR];        /* the worker holds the lease: its slot written, not yet zeroed */
bit rep[NA * NR];          /* finished-sending reported, not yet collected by the scheduler */
#ifdef MUT_L3
bit zpend[NA * NR];        /* reported, zero still to come */
#endif
#ifdef MUT_L4
bit slotBack[NA];
#endif

#ifdef MUT_L1
#define NEXT_NONCE (NonceSource.seq)                         /* no epoch: repeats after a restart */
#else
#define NEXT_NONCE (NonceSource.epoch * 4 + NonceSource.seq) /* seq <= 3 per incarnation */
#endif

/* ------------------------------------------------------------ router --- */
bit arr[NA];               /* attempt arrived at P */
bit dropped[NA];           /* lost by a P restart before P held it */

/* ----------------------------------------------------------------- D --- */
mtype pull[NA];            /* 0 = D has not got the params */
mtype why[NA];
byte  dblk[NA];
byte  dOwner[NDB];         /* D block owner pull, NONE = free */
byte  rd[NA * NR];         /* block READ from P rank r: 0 none, 1 posted, 2 landed */
byte  sr[NA * NR];         /* slot READ on P rank r: 0 none, SR_MATCH, SR_MISMATCH, SR_FAILED */
#define SR_MATCH    1
#define SR_MISMATCH 2
#define SR_FAILED   3
bit   bad[NA];             /* some READ of this pull landed bytes not written by its request+attempt */
bit   hbPend[NA];          /* heartbeat HB:<req> in flight to P */
byte  notif[NA * NR];      /* copies of <req>:<consumers>:<nonce> in flight to P rank r */
bit   decoded[NA];
bit   failUsed;              /* at most one slot READ fails */
bit   dupUsed;               /* at most one notification is duplicated */
#ifdef MUT_L6
bit   notified[NA];
#endif
#ifdef WITH_ABORT
bit   abortUsed;             /* at most one pull ends early */
bit   quar[NA];              /* the pull ended with a READ in flight: its D block is held in quarantine (L13) */
#endif
#ifdef WITH_FORGE
bit   forgeUsed;             /* the one forged <req0>:1 (no nonce) has reached a P rank */
#endif
#ifdef WITH_GRANT
/* the engine path: grants g0 (P block 0, slot 0) and g1 (P block 1, no slot); LeaseTable[0] is g0's
   placeholder lease (its slot and nonce, written on every rank) until P applies a0's commit */
#define G_WRITING 1          /* gst: granted, the slot writes queued */
#define G_OPEN    2          /* answered: the engine holds it */
#define G_CLOSING 3          /* expired or returned: nothing can be committed to it any more */
#define G_DONE    4          /* reclaimed: its unbound blocks are free */
#define GR(g)     (3 + (g))  /* BlockPool.owner of a block granted by g and bound to no request */
#define ROGUE     7          /* earlyFrom: the peer that holds a0's nonce under request 1's id */
byte  gst[2];
bit   ph;                    /* LeaseTable[0] is g0's placeholder: the slot is granted, a0 is not bound on P */
bit   commitPend;            /* the engine's commit of a0 in flight to P */
bit   early[NR];             /* P rank r keeps a0's read <0>:1:<nonce> that came before the commit */
bit   rogueEarly[NR];        /* ... and the peer's <1>:1:<a0's nonce> */
bit   rogueUsed;             /* the peer's one read has reached a P rank */
byte  earlyFrom = NONE;      /* who sent the early read P counts now (transient) */
#endif
#ifdef WITH_TIME
byte  now;                   /* ticks so far */
byte  born[NA];              /* tick of the lease's export */
byte  exp[NA];               /* the lease's expiry tick: the reaper ends it no later */
#endif

/* ============================================================ P side ====== */

/* Flood: other prompts reuse freed blocks and write their own bytes.  By default the worst case is taken:
   a freed block is rewritten at once (any READ after the free sees foreign bytes).  -DLAZY_FLOOD adds a
   Flood process that rewrites a free block at any later time instead. */
#ifdef LAZY_FLOOD
#define FLOOD_FREED(b) skip
#else
#define FLOOD_FREED(b) BlockPool.content[b] = FLOOD
#endif

inline releaseLease(l) {   /* expiry (an abort does the same): the step tells every rank to clear the slot */
  LeaseTable[l].lost = 1;
  LeaseTable[l].state = RELEASING;
  cpend[IX(l, 0)] = 1;
  cpend[IX(l, 1)] = 1
}

inline zeroAndReport(a, r) {
  wlive[IX(a, r)] = 0;
#ifdef MUT_L3
  rep[IX(a, r)] = 1;       /* MUT_L3: report finished-sending first ... */
  zpend[IX(a, r)] = 1      /* ... zero the slot later */
#else
  if                       /* L3: zero (store visible) before reporting finished-sending */
  :: LeaseTable[a].slot != NONE -> SlotPool.mem[r * NS + LeaseTable[a].slot] = 0
  :: else -> skip
  fi;
  rep[IX(a, r)] = 1
#endif
}

/* request-id reuse: P refuses an id whose previous attempt still holds a lease (any state before FREED;
   a restart drops the table), so the attempt waits here: the router retrying later */
#define ID_FREE(a) (byId[REQ(a)] == NONE || LeaseTable[byId[REQ(a)]].state == 0 || \
                    LeaseTable[byId[REQ(a)]].state == FREED)

inline schedule(a) {
  d_step {
    (arr[a] && !dropped[a] && LeaseTable[a].state == 0 && ID_FREE(a) &&
     (BlockPool.owner[0] == NONE || BlockPool.owner[1] == NONE || BlockPool.owner[2] == NONE)) ->
    /* BlockPool: lowest free block */
    if
    :: BlockPool.owner[0] == NONE -> LeaseTable[a].blk = 0
    :: else ->
       if
       :: BlockPool.owner[1] == NONE -> LeaseTable[a].blk = 1
       :: else -> LeaseTable[a].blk = 2
       fi
    fi;
    BlockPool.owner[LeaseTable[a].blk] = a;
    BlockPool.content[LeaseTable[a].blk] = CONTENT(a);   /* the engine writes this attempt's KV */
    /* SlotPool, NonceSource */
    if
    :: SlotPool.free[0] -> LeaseTable[a].slot = 0
#if NS > 1
    :: (!SlotPool.free[0] && SlotPool.free[1]) -> LeaseTable[a].slot = 1
    :: (!SlotPool.free[0] && !SlotPool.free[1]) -> LeaseTable[a].slot = NONE  /* no free slot: no lease fields (L4) */
#else
    :: else -> LeaseTable[a].slot = NONE                 /* no free slot: no lease fields (L4) */
#endif
    fi;
    if
    :: LeaseTable[a].slot != NONE ->
       SlotPool.free[LeaseTable[a].slot] = 0;
       NonceSource.seq++;
       LeaseTable[a].nonce = NEXT_NONCE
    :: else -> LeaseTable[a].nonce = 0
    fi;
    byId[REQ(a)] = a;
    LeaseTable[a].state = RESERVED;
    wpend[IX(a, 0)] = 1;                                   /* L2: slot written in this step on every rank */
    wpend[IX(a, 1)] = 1;
    printf("@ P schedule a%d req=%d att=%d blk=%d slot=%d nonce=%d\n", a, REQ(a), ATT(a),
           LeaseTable[a].blk, LeaseTable[a].slot, LeaseTable[a].nonce)
  }
}

inline export(a) {
  d_step {
#ifdef MUT_L2
    (LeaseTable[a].state == RESERVED || LeaseTable[a].state == SLOT_WRITTEN) ->  /* export before slot written */
#else
    (LeaseTable[a].state == SLOT_WRITTEN) ->
#endif
    LeaseTable[a].state = EXPORTED;                        /* lease starts, kv_transfer_params to router */
#ifdef WITH_TIME
    born[a] = now;
    exp[a] = now + LEASE_T;
#endif
    pull[a] = QUEUED;                                      /* router forwards them verbatim to D */
    hbPend[a] = 1;                                         /* D heartbeats from arrival: HB:<req> in flight */
    printf("@ P export a%d\n", a)
  }
}

inline expire(a) {
  d_step {
    LeaseTable[a].state == EXPORTED ->
    printf("@ P expire a%d\n", a);
    releaseLease(a)
  }
}

inline collect(a) {        /* all ranks reported finished-sending: free blocks, return slot */
  d_step {
    ((LeaseTable[a].state == EXPORTED || LeaseTable[a].state == RELEASING) &&
     rep[IX(a, 0)] && rep[IX(a, 1)]) ->
    rep[IX(a, 0)] = 0;
    rep[IX(a, 1)] = 0;
#ifdef SANITY
    assert(LeaseTable[a].slot == NONE || !SlotPool.free[LeaseTable[a].slot]);   /* model sanity: returns only its own slot */
#endif
    if
#ifdef WITH_GRANT
    :: (a == 0 && ph) -> skip                           /* g0's placeholder: a slot, no block (the grant's) */
#endif
    :: else ->
#ifdef SANITY
       assert(BlockPool.owner[LeaseTable[a].blk] == a);        /* model sanity: frees only its own block */
#endif
       BlockPool.owner[LeaseTable[a].blk] = NONE;
       FLOOD_FREED(LeaseTable[a].blk)
    fi;
    if
#ifdef MUT_L4
    :: (LeaseTable[a].slot != NONE && !slotBack[a]) ->   /* not yet returned early */
       slotBack[a] = 1;
       SlotPool.free[LeaseTable[a].slot] = 1
#else
    :: LeaseTable[a].slot != NONE -> SlotPool.free[LeaseTable[a].slot] = 1
#endif
    :: else -> skip
    fi;
    LeaseTable[a].state = FREED;
#ifdef WITH_GRANT
    if
    :: (a == 0 && ph) -> printf("@ P free the placeholder of g0 (slot %d)\n", LeaseTable[a].slot)
    :: else -> printf("@ P free a%d (blk %d, slot %d)\n", a, LeaseTable[a].blk, LeaseTable[a].slot)
    fi
#else
    printf("@ P free a%d (blk %d, slot %d)\n", a, LeaseTable[a].blk, LeaseTable[a].slot)
#endif
  }
}

#ifdef WITH_GRANT
/* ------------------------------------------------ the engine path (P) --- */

/* Credits.schedule: the engine asked for two grants; g0 gets block 0 and slot 0 (a placeholder lease with a
   fresh nonce, its write queued on every rank), g1 gets block 1 and no slot (none left) */
inline grant() {
  d_step {
    gst[0] == 0 ->
    BlockPool.owner[0] = GR(0);
    BlockPool.owner[1] = GR(1);
    SlotPool.free[0] = 0;
    NonceSource.seq++;
    LeaseTable[0].slot = 0;
    LeaseTable[0].nonce = NEXT_NONCE;
    LeaseTable[0].blk = 0;
    LeaseTable[0].state = RESERVED;
    ph = 1;
    wpend[IX(0, 0)] = 1;
    wpend[IX(0, 1)] = 1;
    gst[0] = G_WRITING;
    gst[1] = G_WRITING;
    printf("@ P grant g0 (blk 0, slot 0, nonce %d) and g1 (blk 1, no slot)\n", LeaseTable[0].nonce)
  }
}

/* Credits.answer: the grants leave for the engine */
inline answer() {
  d_step {
#ifdef MUT_G1
    gst[0] == G_WRITING ->                                  /* MUT_G1: before every rank wrote the slot */
#else
    (gst[0] == G_WRITING && LeaseTable[0].state == SLOT_WRITTEN) ->   /* G1: the slot holds its nonce on every rank */
#endif
    gst[0] = G_OPEN;
    gst[1] = G_OPEN;
    printf("@ P answer the grants: the engine holds g0 and g1\n")
  }
}

inline freeGrantBlocks(g) {  /* the grant's blocks bound to no request go back to the pool */
  if
  :: BlockPool.owner[g] == GR(g) -> BlockPool.owner[g] = NONE; FLOOD_FREED(g)
  :: else -> skip
  fi
}

/* a grant expires, or the engine returns it, at any moment once answered: nothing can be committed to it
   any more, and its unbound slot takes the normal exit (clear on every rank, finished-sending) */
inline closeGrant(g) {
  d_step {
    gst[g] == G_OPEN ->
    gst[g] = G_CLOSING;
    printf("@ P grant g%d closes (expired or returned)\n", g);
    if
    :: (g == 0 && ph) -> releaseLease(0)                    /* a0's params, if out, are lost: D declines */
    :: else -> skip
    fi
#ifdef MUT_G3
    ; if                                                    /* MUT_G3: blocks free at once, slot not yet zeroed */
    :: BlockPool.owner[g] == GR(g) -> printf("@ P frees g%d's unbound blocks at its close\n", g)
    :: else -> skip
    fi;
    freeGrantBlocks(g)
#endif
  }
}

/* Credits.reclaim: once no placeholder of the grant holds a slot (G3), its unbound blocks are freed */
inline reclaim(g) {
  d_step {
    (gst[g] == G_CLOSING && (g == 1 || !ph || LeaseTable[0].state == FREED)) ->
    gst[g] = G_DONE;
    freeGrantBlocks(g);
    printf("@ P reclaim g%d: its unbound blocks are free\n", g)
  }
}

inline countEarly(r) {     /* the early reads kept on rank r count now, as if they arrived now */
  if
  :: early[r] -> earlyFrom = 0
#ifdef MUT_G4
  :: rogueEarly[r] -> earlyFrom = ROGUE                     /* MUT_G4: counted whatever request id it names */
#endif
  :: else -> skip
  fi;
#ifndef MUT_G4
  if
  :: rogueEarly[r] -> printf("@ P%d early read of request 1 not counted for a0: it names another request\n", r)
  :: else -> skip                                          /* G4 */
  fi;
#endif
  early[r] = 0;
  rogueEarly[r] = 0;
  if
  :: earlyFrom != NONE ->
     if
     :: earlyFrom == 0 -> printf("@ P%d early read of a0 counted for a0, finished-sending\n", r)
     :: else -> printf("@ P%d early read of request 1 counted for a0, finished-sending\n", r)
     fi;
     /* property notif_own_attempt: only the committed request's own reads count for it */
     assert(earlyFrom == 0);
     zeroAndReport(0, r);
     earlyFrom = NONE
  :: else -> skip
  fi
}

/* Credits.commit: binds a0 to the block and slot it names and exports its lease, if the grant is open, the
   slot is its unbound one and the block is the same grant's (G5); early reads count now */
inline applyCommit() {
  d_step {
    commitPend ->
    commitPend = 0;
    if
#ifdef MUT_G7
    :: (gst[0] >= G_OPEN && ph && BlockPool.owner[LeaseTable[0].blk] == GR(0)) ->  /* MUT_G7: also once closed */
#else
    :: (gst[0] == G_OPEN && ph && BlockPool.owner[LeaseTable[0].blk] == GR(0)) ->
#endif
       ph = 0;
       BlockPool.owner[LeaseTable[0].blk] = 0;
       byId[0] = 0;
       LeaseTable[0].state = EXPORTED;
       printf("@ P commit a0 accepted: exported (blk %d, slot %d, nonce %d)\n", LeaseTable[0].blk,
              LeaseTable[0].slot, LeaseTable[0].nonce);
       countEarly(0);
       countEarly(1)
    :: else ->
       LeaseTable[0].lost = 1;                              /* the engine's request failed: D may decline */
       printf("@ P commit a0 refused\n")
    fi
  }
}
#endif

#ifdef MUT_L4
inline earlySlot(a) {      /* MUT_L4: slot back to the pool once the release starts, before finished-sending */
  d_step {
    (!slotBack[a] && LeaseTable[a].slot != NONE &&
     (LeaseTable[a].state == RELEASING ||
      (LeaseTable[a].state == EXPORTED && (rep[IX(a, 0)] || rep[IX(a, 1)])))) ->
    slotBack[a] = 1;
    SlotPool.free[LeaseTable[a].slot] = 1;
    printf("@ P slot %d of a%d back to pool early\n", LeaseTable[a].slot, a)
  }
}
#endif

#ifdef MUT_L12
#define HB_NONCE_OK(l, a) true                                 /* nonce ignored: the id's lease */
#else
#define HB_NONCE_OK(l, a) (LeaseTable[l].nonce == LeaseTable[a].nonce)   /* L12 */
#endif

#ifdef WITH_TIME
#ifdef MUT_L12B
#define CAP(l, t) (t)                                          /* no maximum lifetime */
#else
#define CAP(l, t) ((t) < born[l] + MAX_T -> (t) : born[l] + MAX_T) /* L12: never past export + MAX_T */
#endif
#define EXTEND(l) if \
    :: (now + EXT_T > exp[l]) -> exp[l] = CAP(l, now + EXT_T) \
    :: else -> skip \
    fi
#define LIVE(l) (LeaseTable[l].state == EXPORTED && now < exp[l])  /* as Lease.isLive: not at its expiry */
#else
#define EXTEND(l) skip                                         /* no clock: extension has no state */
#define LIVE(l) (LeaseTable[l].state == EXPORTED)
#endif

inline heartbeat(a) {      /* HB:<req>:<nonce> from the pull of attempt a */
  d_step {
    hbPend[a] ->
    hbPend[a] = 0;
    l = byId[REQ(a)];
    if
    :: (l != NONE && LIVE(l) && HB_NONCE_OK(l, a)) ->
       hbFrom = a;
       /* property hb_own_attempt: a lease with a slot is extended only by a heartbeat carrying its nonce */
       assert(LeaseTable[hbFrom].nonce == LeaseTable[l].nonce || LeaseTable[l].slot == NONE);
       EXTEND(l);
       printf("@ P heartbeat of a%d req=%d extends a%d\n", a, REQ(a), l)
    :: (l != NONE && LIVE(l) && !HB_NONCE_OK(l, a)) ->
       printf("@ P heartbeat of a%d req=%d refused\n", a, REQ(a))
#ifdef MUT_L8
    :: (l != NONE && (LeaseTable[l].state == RELEASING || LeaseTable[l].state == FREED) && HB_NONCE_OK(l, a)) ->
       LeaseTable[l].state = EXPORTED;                   /* revived: live again, so its nonce is re-armed */
       wpend[IX(l, 0)] = 1;
       wpend[IX(l, 1)] = 1;
       printf("@ P heartbeat of a%d req=%d REVIVES a%d\n", a, REQ(a), l)
#endif
    :: else -> printf("@ P heartbeat of a%d req=%d ignored\n", a, REQ(a))
    fi;
    l = NONE;
    hbFrom = NONE
  }
}

#ifdef WITH_TIME
#define DUE(a) (LeaseTable[a].state == EXPORTED && exp[a] <= now)
#define WAITING(a) (pull[a] == QUEUED || pull[a] == READING || pull[a] == CHECKING_SLOTS)
/* Time passes only once the reaper took every lease that is due (it sweeps every step). D heartbeats a
   waiting pull every tick. Property lifetime_bounded: no lease is live (exported, before its expiry) past
   export + MAX_T. */
inline tick() {
  d_step {
    (now < NT && !DUE(0) && !DUE(1) && !DUE(2)) ->
    now++;
    assert(!LIVE(0) || now - born[0] <= MAX_T);
    if
    :: WAITING(0) -> hbPend[0] = 1
    :: else -> skip
    fi;
    printf("@ tick (now %d)\n", now)
  }
}
#endif

proctype LeaseScheduler() {
  byte l = NONE;
  byte hbFrom = NONE;
end:
  do
#ifdef WITH_GRANT
  :: grant()
  :: answer()
  :: applyCommit()
  :: closeGrant(0)
  :: closeGrant(1)
  :: reclaim(0)
  :: reclaim(1)
#ifndef MUT_L8B
  :: expire(0)             /* the committed lease may expire at any time */
#endif
  :: collect(0)
#ifdef MUT_L4
  :: earlySlot(0)
#endif
#else
  :: schedule(0)
  :: schedule(1)
  :: schedule(2)
  :: export(0)
  :: export(1)
  :: export(2)
#ifndef MUT_L8B
  :: expire(0)             /* the reaper sweeps every lease: any EXPORTED lease may expire at any time */
  :: expire(1)
  :: expire(2)
#endif
  :: collect(0)
  :: collect(1)
  :: collect(2)
  :: heartbeat(0)
  :: heartbeat(1)
  :: heartbeat(2)
#ifdef WITH_TIME
  :: tick()
#endif
#ifdef MUT_L4
  :: earlySlot(0)
  :: earlySlot(1)
  :: earlySlot(2)
#endif
#endif
  od
}

/* ---------------------------------------------------- P worker rank --- */

inline applyClear(a, r) {
  if
  :: cpend[IX(a, r)] ->
     cpend[IX(a, r)] = 0;
     if
     :: wlive[IX(a, r)] -> zeroAndReport(a, r); printf("@ P%d clear slot of a%d, finished-sending\n", r, a)
     :: else -> skip
     fi
  :: else -> skip
  fi
}

inline applyWrite(a, r) {
  if
  :: wpend[IX(a, r)] ->
     wpend[IX(a, r)] = 0;
     if
     :: LeaseTable[a].slot != NONE -> SlotPool.mem[r * NS + LeaseTable[a].slot] = LeaseTable[a].nonce
     :: else -> skip
     fi;
     wlive[IX(a, r)] = 1;
     printf("@ P%d write slot of a%d\n", r, a);
     if
     :: (LeaseTable[a].state == RESERVED && wlive[IX(a, 0)] && wlive[IX(a, 1)]) ->
        LeaseTable[a].state = SLOT_WRITTEN
     :: else -> skip
     fi
  :: else -> skip
  fi
}

inline applyStep(r) {
  d_step {
    (cpend[IX(0, r)] || cpend[IX(1, r)] || cpend[IX(2, r)] ||
     wpend[IX(0, r)] || wpend[IX(1, r)] || wpend[IX(2, r)]) ->
#ifdef MUT_L2B
    applyWrite(0, r); applyWrite(1, r); applyWrite(2, r);   /* writes before clears */
    applyClear(0, r); applyClear(1, r); applyClear(2, r)
#else
    applyClear(0, r); applyClear(1, r); applyClear(2, r);   /* L2: clears before writes */
    applyWrite(0, r); applyWrite(1, r); applyWrite(2, r)
#endif
  }
}

#ifdef MUT_L6B
#define NONCE_OK(b, a) (byId[REQ(a)] == b)                    /* nonce ignored: the id's current lease */
#else
#define NONCE_OK(b, a) (LeaseTable[b].nonce == LeaseTable[a].nonce)
#endif

#ifdef WITH_GRANT
#define IS_LEASE(b) ((b) != 0 || !ph)   /* g0's placeholder holds no request id: a read naming a0 finds none */
#else
#define IS_LEASE(b) true
#endif

inline matchLive(b, a, r) {
  if
  :: (REQ(b) == REQ(a) && IS_LEASE(b) && wlive[IX(b, r)] && NONCE_OK(b, a)) -> l = b
  :: else -> skip
  fi
}

inline deliver(a, r) {     /* notification <req>:<consumers=1>:<nonce> sent by pull a */
  d_step {
    notif[IX(a, r)] > 0 ->
    notif[IX(a, r)]--;
    matchLive(0, a, r);
    matchLive(1, a, r);
    matchLive(2, a, r);
    if
    :: l != NONE ->
       printf("@ P%d notification of a%d counted for a%d, finished-sending\n", r, a, l);
       /* property notif_own_attempt: only the lease of the notifying attempt is released */
       assert(l == a);
       zeroAndReport(l, r)
#ifdef WITH_GRANT
    :: (l == NONE && ph && gst[0] == G_OPEN && LeaseTable[0].nonce == LeaseTable[a].nonce) ->
       early[r] = 1;                       /* a granted, unbound nonce: kept on the grant for the commit */
       printf("@ P%d notification of a%d kept early for the commit\n", r, a)
#endif
    :: else ->
       printf("@ P%d notification of a%d ignored\n", r, a)
    fi;
    l = NONE
  }
}

#ifdef WITH_GRANT
/* <1>:1:<a0's nonce> from a peer that holds a0's params under request 1's id (crossed params, a buggy or
   hostile decoder); it reaches one rank at any moment after the params left. Request 1 holds no lease, so
   P keeps it early if the nonce is still a granted, unbound one, and must never count it for a0 (G4) */
inline deliverRogue(r) {
  d_step {
    (!rogueUsed && pull[0] != 0) ->
    rogueUsed = 1;
    if
    :: (ph && gst[0] == G_OPEN) ->
       rogueEarly[r] = 1;
       printf("@ P%d read of request 1 with a0's nonce kept early for the commit\n", r)
    :: else ->
       printf("@ P%d read of request 1 with a0's nonce ignored\n", r)
    fi
  }
}
#endif

#ifdef WITH_FORGE
#ifdef MUT_L11
#define UNSIGNED_OK(b) true                                    /* a notification without a nonce is believed */
#else
#define UNSIGNED_OK(b) (LeaseTable[b].slot == NONE)            /* L11: only a lease without a slot has no nonce */
#endif

inline matchForged(b, r) {
  if
  :: (REQ(b) == 0 && wlive[IX(b, r)] && UNSIGNED_OK(b)) -> l = b
  :: else -> skip
  fi
}

/* <req0>:1 from a peer that knows request 0's id (ids are no secret), not its nonce; it arrives at one rank
   at any moment (when it was sent does not matter: P sees it only when it arrives) */
inline deliverForged(r) {
  d_step {
    !forgeUsed ->
    forgeUsed = 1;
    matchForged(0, r);
    matchForged(1, r);
    if
    :: l != NONE ->
       printf("@ P%d forged notification req=0 counted for a%d, finished-sending\n", r, l);
       /* property notif_own_attempt: a lease with a slot is released only by its own reader */
       assert(LeaseTable[l].slot == NONE);
       zeroAndReport(l, r)
    :: else ->
       printf("@ P%d forged notification req=0 ignored\n", r)
    fi;
    l = NONE
  }
}
#endif

#ifdef MUT_L3
inline lateZero(a, r) {
  d_step {
    zpend[IX(a, r)] ->
    zpend[IX(a, r)] = 0;
    if
    :: LeaseTable[a].slot != NONE -> SlotPool.mem[r * NS + LeaseTable[a].slot] = 0
    :: else -> skip
    fi;
    printf("@ P%d zero slot of a%d (late)\n", r, a)
  }
}
#endif

proctype PRank(byte r) {
  byte l = NONE;
end:
  do
  :: applyStep(r)
  :: deliver(0, r)
  :: deliver(1, r)
  :: deliver(2, r)
#ifdef WITH_FORGE
  :: deliverForged(r)
#endif
#ifdef WITH_GRANT
  :: deliverRogue(r)
#endif
#ifdef MUT_L3
  :: lateZero(0, r)
  :: lateZero(1, r)
  :: lateZero(2, r)
#endif
  od
}

/* ============================================================ D side ====== */

inline sendNotif(a) {      /* to every source rank; may be duplicated; delivery is late and unordered */
  if
  :: notif[IX(a, 0)] = 1; notif[IX(a, 1)] = 1
#ifdef WITH_DUP
  :: !dupUsed -> dupUsed = 1; notif[IX(a, 0)] = 2; notif[IX(a, 1)] = 2;
     printf("@ D notification of a%d duplicated\n", a)
#endif
  fi;
  printf("@ D notify a%d req=%d nonce=%d\n", a, REQ(a), LeaseTable[a].nonce)
}

#ifndef MUT_L7
inline noLease(a) {        /* L7: missing lease fields fail the load */
  d_step {
    (pull[a] == QUEUED && LeaseTable[a].slot == NONE) ->
    pull[a] = DECLINED;
    why[a] = no_lease;
    printf("@ D decide a%d DECLINED no_lease\n", a)
  }
}
#endif

inline start(a) {          /* allocate a D block, post block READs on every rank, no notification */
  d_step {
    (pull[a] == QUEUED && D_BLOCK_FREE
#ifndef MUT_L7
     && LeaseTable[a].slot != NONE
#endif
    ) ->
#if NDB > 1
    if
    :: dOwner[0] == NONE -> dblk[a] = 0
    :: else -> dblk[a] = 1
    fi;
#else
    dblk[a] = 0;
#endif
    dOwner[dblk[a]] = a;
    rd[IX(a, 0)] = 1;
    rd[IX(a, 1)] = 1;
    if
    :: LeaseTable[a].slot == NONE -> sr[IX(a, 0)] = SR_MISMATCH; sr[IX(a, 1)] = SR_MISMATCH
    :: else -> skip
    fi;
    pull[a] = READING;
    printf("@ D start a%d dblk=%d READ P blk %d\n", a, dblk[a], LeaseTable[a].blk)
  }
}

#define TERM(a, r) (rd[IX(a, r)] == 2 && sr[IX(a, r)] != 0)
#ifdef MUT_L9
#define READY(a) ((pull[a] == READING || pull[a] == CHECKING_SLOTS) && (TERM(a, 0) || TERM(a, 1)))
#else
#define READY(a) (pull[a] == CHECKING_SLOTS && TERM(a, 0) && TERM(a, 1))   /* L9 */
#endif
#define RANKOK(a, r) (sr[IX(a, r)] == 0 || sr[IX(a, r)] == SR_MATCH)
#ifdef MUT_L7
#define CHECK_OK(a) true                   /* MUT_L7: a failed check does not fail the load */
#else
#define CHECK_OK(a) (RANKOK(a, 0) && RANKOK(a, 1))
#endif

inline decide(a) {
  atomic {
    READY(a) ->
    if
    :: CHECK_OK(a) ->
       pull[a] = RECEIVED;
       printf("@ D decide a%d RECEIVED\n", a);
       /* property received_own_bytes */
       assert(!bad[a]);
#ifndef MUT_L6
       sendNotif(a)        /* L6: only after the slot check */
#endif
    :: else ->
       pull[a] = DECLINED;
       dOwner[dblk[a]] = NONE;
       if
       :: (sr[IX(a, 0)] == SR_FAILED || sr[IX(a, 1)] == SR_FAILED) ->
          why[a] = slot_read_failed;
          printf("@ D decide a%d DECLINED slot_read_failed\n", a)
       :: else ->
          why[a] = lease_mismatch;
          printf("@ D decide a%d DECLINED lease_mismatch\n", a);
          /* property no_spurious_decline: a lease that did not expire and was not lost is not declined */
#ifndef NO_SPURIOUS_CHECK
          assert(LeaseTable[a].lost)
#else
          skip
#endif
       fi
    fi
  }
}

#ifdef MUT_L6
inline earlyNotify(a) {    /* MUT_L6: notify as soon as the block READs completed, before the check */
  atomic {
    (!notified[a] && (pull[a] == CHECKING_SLOTS || pull[a] == RECEIVED)) ->
    notified[a] = 1;
    sendNotif(a)
  }
}
#endif

#ifdef WITH_ABORT
#define IN_FLIGHT(a) (rd[IX(a, 0)] == 1 || rd[IX(a, 1)] == 1)
inline endEarly(a) {       /* the pull ends before it is decided: timeout, abort, or its producer gone */
  d_step {
    (!abortUsed && (pull[a] == QUEUED || pull[a] == READING || pull[a] == CHECKING_SLOTS)) ->
    abortUsed = 1;
    if
    :: (pull[a] != QUEUED && IN_FLIGHT(a)) ->
#ifdef MUT_L13
       dOwner[dblk[a]] = NONE;                           /* freed at once: the READ may still land */
#else
       quar[a] = 1;                                      /* L13: held until every READ of it is terminal */
#endif
       skip
    :: (pull[a] != QUEUED && !IN_FLIGHT(a)) -> dOwner[dblk[a]] = NONE
    :: else -> skip
    fi;
    pull[a] = DECLINED;
    why[a] = ended;
    printf("@ D abort a%d\n", a)
  }
}

inline unquarantine(a) {
  d_step {
    (quar[a] && !IN_FLIGHT(a)) ->
    quar[a] = 0;
    dOwner[dblk[a]] = NONE;
    printf("@ D quarantined dblk %d of a%d free: its READs ended\n", dblk[a], a)
  }
}
#endif

inline decodeDone(a) {
  d_step {
    (pull[a] == RECEIVED && !decoded[a]) ->
    decoded[a] = 1;
    dOwner[dblk[a]] = NONE;
    printf("@ D decode of a%d done, dblk %d free\n", a, dblk[a])
  }
}

proctype DReader() {
end:
  do
#ifndef MUT_L7
  :: noLease(0)
  :: noLease(1)
  :: noLease(2)
#endif
  :: start(0)
  :: start(1)
  :: start(2)
  :: decide(0)
  :: decide(1)
  :: decide(2)
  :: decodeDone(0)
  :: decodeDone(1)
  :: decodeDone(2)
#ifdef WITH_ABORT
  :: endEarly(0)
  :: endEarly(1)
  :: endEarly(2)
  :: unquarantine(0)
  :: unquarantine(1)
  :: unquarantine(2)
#endif
#ifdef MUT_L6
  :: earlyNotify(0)
  :: earlyNotify(1)
  :: earlyNotify(2)
#endif
  od
}

/* ------------------------------------------------------ D rank transfers --- */

inline land(a, r) {        /* a block READ from P rank r lands in D rank r's slice of the D block */
  d_step {
    rd[IX(a, r)] == 1 ->
    rd[IX(a, r)] = 2;
    printf("@ D%d READ a%d lands: P blk %d holds %d, into dblk %d\n", r, a, LeaseTable[a].blk,
           BlockPool.content[LeaseTable[a].blk], dblk[a]);
    /* property read_into_own_dblock */
    assert(dOwner[dblk[a]] == a);
    if
    :: BlockPool.content[LeaseTable[a].blk] != CONTENT(a) -> bad[a] = 1
    :: else -> skip
    fi;
    /* property received_own_bytes (a READ landing after the decision) */
    assert(!(pull[a] == RECEIVED && bad[a]));
    if
    :: (pull[a] == READING && rd[IX(a, 0)] == 2 && rd[IX(a, 1)] == 2) -> pull[a] = CHECKING_SLOTS
    :: else -> skip
    fi
  }
}

#ifdef MUT_L5
#define SLOT_READ_OK(a, r) (rd[IX(a, r)] >= 1)   /* posted with the block READs */
#else
#define SLOT_READ_OK(a, r) (rd[IX(a, r)] == 2)   /* L5: after this rank's block READs completed */
#endif

inline slotRead(a, r) {
  atomic {
    (SLOT_READ_OK(a, r) && sr[IX(a, r)] == 0 && LeaseTable[a].slot != NONE &&
     (pull[a] == READING || pull[a] == CHECKING_SLOTS)) ->
    if
#ifdef WITH_FAIL
    :: !failUsed -> failUsed = 1; sr[IX(a, r)] = SR_FAILED
#endif
    :: SlotPool.mem[r * NS + LeaseTable[a].slot] == LeaseTable[a].nonce -> sr[IX(a, r)] = SR_MATCH
    :: SlotPool.mem[r * NS + LeaseTable[a].slot] != LeaseTable[a].nonce -> sr[IX(a, r)] = SR_MISMATCH
    fi;
    printf("@ D%d slot READ a%d: slot %d holds %d, want %d -> %d\n", r, a, LeaseTable[a].slot,
           SlotPool.mem[r * NS + LeaseTable[a].slot], LeaseTable[a].nonce, sr[IX(a, r)])
  }
}

proctype DRank(byte r) {
end:
  do
  :: land(0, r)
  :: land(1, r)
  :: land(2, r)
  :: slotRead(0, r)
  :: slotRead(1, r)
  :: slotRead(2, r)
  od
}

/* ======================================================== environment ===== */

#ifdef LAZY_FLOOD
proctype Flood() {         /* other prompts take freed blocks and write their own bytes */
end:
  do
  :: atomic { (BlockPool.owner[0] == NONE && BlockPool.content[0] != FLOOD) -> BlockPool.content[0] = FLOOD; printf("@ flood blk 0\n") }
  :: atomic { (BlockPool.owner[1] == NONE && BlockPool.content[1] != FLOOD) -> BlockPool.content[1] = FLOOD; printf("@ flood blk 1\n") }
  :: atomic { (BlockPool.owner[2] == NONE && BlockPool.content[2] != FLOOD) -> BlockPool.content[2] = FLOOD; printf("@ flood blk 2\n") }
  od
}
#endif

#ifdef WITH_GRANT
/* The engine (its connector plugin): once it holds the grants it binds a0 to a granted block and the granted
   slot locally, copies a0's KV into the block, hands the params (that block, slot and nonce) to the router,
   which forwards them to D, and then sends its commit to P, or dies first (the commit never comes).
   The engine writes a grant's blocks only before its own deadline for the grant, counted from before it
   asked, so earlier than P's expiry; it returns a grant only once it no longer writes into it. Without
   clocks: the copy happens only while P holds the grant open (G6, the model's name for it); past it the
   engine drops the request. Property copy_into_granted_block: the engine's copy lands only in a block P
   still grants it. */
#ifdef MUT_G6
#define IN_TIME(g) true                                     /* MUT_G6: the engine writes past its deadline */
#else
#define IN_TIME(g) (gst[g] == G_OPEN)
#endif

inline engineCopy() {
  if
  :: d_step {
       IN_TIME(LeaseTable[0].blk) ->
       /* property copy_into_granted_block */
       assert(BlockPool.owner[LeaseTable[0].blk] == GR(LeaseTable[0].blk));
       BlockPool.content[LeaseTable[0].blk] = CONTENT(0);
       printf("@ E copy a0's KV into blk %d\n", LeaseTable[0].blk)
     }
  :: d_step {
       !IN_TIME(LeaseTable[0].blk) ->
       printf("@ E past its deadline for g%d: a0 dropped\n", LeaseTable[0].blk)
     };
     goto gone
  fi
}

inline engineParams() {
  d_step { pull[0] = QUEUED; printf("@ E params of a0 to D\n") }
}

proctype Engine() {
  atomic {                                                  /* atomic, not d_step: the choice of MUT_G5 */
    gst[0] >= G_OPEN ->
#ifdef MUT_G5
    if
    :: LeaseTable[0].blk = 0
    :: LeaseTable[0].blk = 1                                /* MUT_G5: g1's block with g0's slot */
    fi;
#else
    LeaseTable[0].blk = 0;                                  /* G5: block and slot of one grant */
#endif
    printf("@ E bind a0 req=0 to blk %d (g%d) and slot %d (g0), nonce %d\n", LeaseTable[0].blk,
           LeaseTable[0].blk, LeaseTable[0].slot, LeaseTable[0].nonce)
  };
#ifdef MUT_G2
  if                                                        /* MUT_G2: params out before the copy is done */
  :: engineCopy(); engineParams()
  :: engineParams(); engineCopy()
  fi;
#else
  engineCopy();
  engineParams();                                           /* G2: only once the copy is complete */
#endif
  if
  :: d_step { commitPend = 1; printf("@ E commit a0 sent\n") }
  :: printf("@ E dies: the commit of a0 never comes\n")
  fi;
gone:
  skip
}
#endif

proctype Router() {        /* attempt 2 of request 0 (same id) once attempt 1's params were out or lost;
                              P schedules it only once attempt 1's lease is freed or dropped (ID_FREE) */
  if
  :: atomic { (pull[0] != 0 || dropped[0]) -> arr[1] = 1; printf("@ router: request 0 again (a1)\n") }
  :: skip
  fi
}

inline dropP(a) {
  if
  :: (LeaseTable[a].state != 0 || arr[a]) ->
     if
     :: (LeaseTable[a].state != 0 && LeaseTable[a].state != FREED) -> LeaseTable[a].lost = 1
     :: else -> skip
     fi;
     LeaseTable[a].state = 0;
     dropped[a] = 1
  :: else -> skip
  fi;
  wpend[IX(a, 0)] = 0; wpend[IX(a, 1)] = 0;
  cpend[IX(a, 0)] = 0; cpend[IX(a, 1)] = 0;
  wlive[IX(a, 0)] = 0; wlive[IX(a, 1)] = 0;
  rep[IX(a, 0)] = 0;   rep[IX(a, 1)] = 0
#ifdef MUT_L3
  ; zpend[IX(a, 0)] = 0; zpend[IX(a, 1)] = 0
#endif
}

proctype Restart() {       /* P restarts once, at any time; worst case: the same memory is registered again */
  byte i;
  if
  :: atomic {
       dropP(0); dropP(1); dropP(2);
       byId[0] = NONE; byId[1] = NONE;
       BlockPool.owner[0] = NONE; BlockPool.owner[1] = NONE; BlockPool.owner[2] = NONE;
       FLOOD_FREED(0); FLOOD_FREED(1); FLOOD_FREED(2);
       SLOTS_FREE;
       for (i : 0 .. NR * NS - 1) { SlotPool.mem[i] = 0 };  /* fresh registration */
       i = 0;
       NonceSource.epoch++;
       NonceSource.seq = 0;
       printf("@ P restart (epoch %d)\n", NonceSource.epoch)
     }
  :: skip
  fi
}

/* ============================================================ properties ==== */
/* safety (assertions above): received_own_bytes, read_into_own_dblock, notif_own_attempt,
   no_spurious_decline.  Liveness: */
#define SETTLED(a) (pull[a] == 0 || pull[a] == RECEIVED || pull[a] == DECLINED)
#define QUIET (BlockPool.owner[0] == NONE && BlockPool.owner[1] == NONE && BlockPool.owner[2] == NONE && \
               ALL_SLOTS_FREE && ALL_D_FREE && \
               SETTLED(0) && SETTLED(1) && SETTLED(2))

ltl drained { <> [] QUIET }

init {
  atomic {
    BlockPool.owner[0] = NONE; BlockPool.owner[1] = NONE; BlockPool.owner[2] = NONE;
    SLOTS_FREE;
    NonceSource.epoch = 1;
    byId[0] = NONE; byId[1] = NONE;
    dOwner[0] = NONE;
#if NDB > 1
    dOwner[1] = NONE;
#endif
#ifdef WITH_GRANT
    BlockPool.content[0] = FLOOD;   /* a granted block holds some other prompt's bytes until the engine's copy */
    BlockPool.content[1] = FLOOD;
    BlockPool.content[2] = FLOOD;
    run Engine();
#else
    arr[0] = 1;
#endif
#ifdef WITH_TWO
    arr[2] = 1;            /* request 1 arrives with request 0 */
#endif
    run LeaseScheduler();
    run PRank(0);
    run PRank(1);
    run DReader();
    run DRank(0);
    run DRank(1);
#ifdef LAZY_FLOOD
    run Flood();
#endif
#ifdef WITH_REUSE
    run Router();
#endif
#ifdef WITH_RESTART
    run Restart()
#endif
  }
}
