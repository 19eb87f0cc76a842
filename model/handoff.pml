/*
 * handoff.pml -- Promela model of writerctl's session-writer lock-file protocol
 * (seed 001 "Fixed claim", "Sealing", "Certified takeover", "Failure contract";
 * QWEN_FORMAT §5.1-§5.8, §5.10; src/lockfile/{primitives,acquire,transition,seal,release,
 * recover,holder_lock,exclusive}.rs).
 *
 * Files are byte variables holding a record value (0 = no file). A record value names
 * one owner token (actor, generation) and a kind (active / sealed). Every filesystem
 * call is one atomic step; a check-then-act that the code does in two calls is two
 * steps here. See README.md for what is abstracted away.
 *
 * Issue 38: every transition that gives the transcript a new writer (an install, a reclaim,
 * a takeover, `recover` moving an owner aside) rests on the kernel's proof (a) the recorded
 * holder's tree is gone -- its holder lock is free *and* the holder file is the very inode
 * the record names -- and (b) no open file description can write the transcript (a
 * momentary read lease). The holder's tree, its holder file, write descriptors that escaped
 * the tree and `recover` are modelled; see "Issue 38" in README.md.
 *
 * Tunables (pass with spin -D...):
 *   G     owner tokens (acquisitions) per actor       (default 2)
 *   MAXF  injected faults per run, across all actors   (default 1)
 *   WAIT  candidate observations before giving up      (default 2; code: 100, qwen: 20)
 *   ACQ   ordinary-acquire attempts                    (default 2; code: 8)
 *   SEED  1: L may start holding a sealed record left by a departed writer; 2: also an active
 *         record of a departed holder whose tree is gone (a pod SIGKILLed past its grace),
 *         possibly with its write descriptor still open outside the tree (default 1)
 *   RESTART 1: actor 0 may be SIGKILLed (its whole tree: an OOM kill of its container) while
 *         it owns the session, its record left at L; actor 1 is the same container of the
 *         same Pod, started by the kubelet only once actor 0 is dead (default 0)
 *   SIDECAR 1 (with RESTART=1): actor 1 carries actor 0's pod labels but is not its restarted
 *         container: it may start while actor 0 lives (issue 27, reproduction 1) (default 0)
 *   EVIDENCE 0: actor 1 may also reclaim on the pod labels alone (the code before issue 27;
 *         check.sh expects property 2 to fail). 1: no label rule; every reclaim is by the
 *         kernel's proof (issue 38 item 2) (default 1)
 *   NEGCACHE 1: actor 2 is on another host whose acquire claim checks may answer from a
 *         cached "no such file" (issue 27 reproduction 4; property 4 fails) (default 0)
 *   ESCAPE 1: an outside process (an SCM_RIGHTS receiver, a sidecar, a daemon) may get a
 *         write description of the transcript from a running writer and keep appending
 *         after the holder's tree is gone, until it closes it (issue 38 repro 1) (default 1)
 *   LEASE 0: no transcript lease before a new writer (issue 27: holder evidence alone;
 *         property 5 fails). 1: the lease is asked at the start of an acquisition, again
 *         atomically with the reclaim's judgement of (a) and its move, and again once our
 *         record is at L before the lease is returned. 2: only once, at the start of the
 *         acquisition, before (a) is read and before the install; 3: as 1 but not again
 *         after the install (default 1)
 *   REPLACE 1: a live holder's holder file may be removed and recreated (a new inode whose
 *         lock is free: a backup tool, a cleanup script; issue 38 repro 4) (default 0)
 *   IDENTITY 0: the holder-lock probe trusts the file name; 1: it also checks the file is
 *         the inode the record names (writerctl_holder_lock_id), else "unverifiable" (default 1)
 *   RECOVER 1: an operator runs `recover --writers-fenced --yes` once, by issue 38's rule as
 *         the engine implements it (refuse a held holder lock, a running recorded pid, a
 *         refused lease); 2: by the rule before issue 38 (repro 2); 3: rule 1 and also refuse
 *         while the transcript lock the holder's tree keeps is held; 0: no recover (default 0)
 *   HOLDERFIX 0: the holder file is created, then locked: a probe landing in between takes
 *         the lock and the record is written without a holder lock (issue 38 repro 3); 1: a
 *         private file is locked, then linked into place (default 1)
 *   SUPKILL 1: actor 0's supervisor (`run`, the recorded pid) may be SIGKILLed alone while
 *         its writer lives on: the pid table says "gone" while the tree lives (default 0)
 *   REACH 1: a witness, not a property: an assertion fails when a lease is returned by a
 *         reclaim of a record whose writer's descriptor had escaped (and has been closed):
 *         check.sh requires spin to find that path (issue 38 repro 8: no dead end) (default 0)
 */

#define N 3

#ifndef G
#define G 2
#endif
#ifndef MAXF
#define MAXF 1
#endif
#ifndef WAIT
#define WAIT 2
#endif
#ifndef ACQ
#define ACQ 2
#endif
#ifndef SEED
#define SEED 1
#endif
#ifndef RESTART
#define RESTART 0
#endif
#ifndef SIDECAR
#define SIDECAR 0
#endif
#ifndef EVIDENCE
#define EVIDENCE 1
#endif
#ifndef NEGCACHE
#define NEGCACHE 0
#endif
#ifndef ESCAPE
#define ESCAPE 1
#endif
#ifndef LEASE
#define LEASE 1
#endif
#ifndef REPLACE
#define REPLACE 0
#endif
#ifndef IDENTITY
#define IDENTITY 1
#endif
#ifndef RECOVER
#define RECOVER 0
#endif
#ifndef HOLDERFIX
#define HOLDERFIX 1
#endif
#ifndef SUPKILL
#define SUPKILL 0
#endif
#ifndef REACH
#define REACH 0
#endif
/* whether actor `me`'s acquire claim checks may be answered from a cached absence */
#define CACHED_CLAIM (NEGCACHE && me == 2)
/* the actor whose restarted container actor `a` is (N: none) */
#define PRED(a) ((RESTART && (a) == 1) -> 0 : N)

#define ACTIVE 0
#define SEALED 1
/* record value: owner token (actor a, generation g) and kind k; 0 means "no file" */
#define REC(a, g, k)  (1 + (((a) * G + (g)) * 2 + (k)))
#define RACTOR(v)     (((v) - 1) / 2 / G)
#define RKIND(v)      (((v) - 1) % 2)
#define MAXREC        REC(N, G - 1, SEALED)   /* actor N = the departed writer */
#define UNK 255                               /* a read that failed (EIO) */

/* link / rename / unlink outcomes */
#define OK 0
#define EEXIST 1
#define EIO 2
#define ENOENT 3
/* install (§5.1) outcomes */
#define INST 0
#define INOT 1
#define IERR 2
/* link_primary_under_transition_claim outcomes */
#define LCP_OK 0
#define LCP_FAIL 1
#define LCP_UNCLEAR 2
/* transition stage */
#define NS 0
#define ST 1
#define CM 2

/* ---------------------------------------------------------------- the directory */
byte L;                 /* primary lock path                          */
byte C;                 /* L.claim                                    */
byte CAND[N * G];       /* L.sealed-candidate.<o>   (seal)            */
byte RET[N * G];        /* L.handoff.<o>            (seal retired)    */
byte SRET[N * G];       /* L.sealed.<sealed>.<o>    (takeover retired)*/
byte REL[N * G];        /* L.released.<o>           (release)         */
byte STALE[N * G];      /* L.stale.<o>              (reclaim)         */

byte faults = MAXF;

/* ---------------------------------------------------------------- the kernel (issue 38) */
bool tree[N];           /* actor a's holder tree (`run` and its writer) lives: it holds the
                           holder lock of its current record (and the transcript lock) */
bool hrep[N];           /* the holder file actor a's record names was removed and recreated:
                           a new inode, whose lock is free (REPLACE) */
bool nohl[N];           /* actor a's record names no holder lock (HOLDERFIX=0: a probe took
                           the lock between the create and the flock) */
bool supdead;           /* actor 0's supervisor, the recorded pid, was SIGKILLed alone (SUPKILL) */
byte esc;               /* the owner token (its active record value) whose writer handed a
                           write description of the transcript to a process outside its tree,
                           still open; 0: none. What the read lease sees besides live writers. */

/* ---------------------------------------------------------------- ghost state */
bool owner[N];          /* set when acquire/reclaim/takeover returns a lease; cleared when
                           the lease starts a release or a seal (appends stop first) */
byte ownrec[N];         /* the record value of that lease                */
byte certified[N];      /* the sealed record this actor validated under its claim */
bool retained[N];       /* a transition ended with its claim deliberately retained */
bool dead[N];           /* the actor's process was killed (RESTART): it never acts again */
bool finished[N];       /* the actor finished normally */
bool gap[N];            /* actor a moved L aside under its claim (transition, rollback) and
                           has not linked anything back: L is missing on its account */
byte escfrom;           /* the token whose descriptor escaped (kept after it closes; REACH) */

/* Always 0; named in an assertion so that pan's report says which property failed (check.sh
 * matches on the text). Hidden: not part of the state. */
hidden byte live_holder_moved;  /* (2): a reclaim or recover moved a live holder's record */
hidden byte two_writers;        /* (5): a second writer of the transcript */
hidden byte witness_reclaimed_after_handout;  /* REACH */

/* (2) a record may only be removed / moved by the actor that wrote it, or by the
 *     certified taker of that exact sealed record (a reclaim and `recover` assert GONE). */
#define AUTH(me, v) ((v) == 0 || RACTOR(v) == (me) || (v) == certified[me] || \
                     (!EVIDENCE && RESTARTED_FROM(me, v)))
/* the truth the label rule must rest on: an active record of our predecessor, which is
 * dead or has exited */
#define RESTARTED_FROM(me, v) (PRED(me) != N && RACTOR(v) == PRED(me) && \
                               (dead[PRED(me)] || finished[PRED(me)]) && RKIND(v) == ACTIVE)
/* the label rule (EVIDENCE=0, the code before issue 27): the record carries our pod labels */
#define LABEL_RULE(me, v) (PRED(me) != N && RACTOR(v) == PRED(me) && RKIND(v) == ACTIVE)

/* The truth a reclaim and `recover` must rest on: an active record whose holder's tree is
 * gone (a departed writer's tree is gone). Escaped descriptors are property (5)'s business. */
#define TREE(x)  ((x) != N && tree[x])
#define GONE(v)  (RKIND(v) == ACTIVE && !TREE(RACTOR(v)))

/* What the holder-lock probe (holder_lock_state) says of holder x's recorded file. A
 * replaced file is a new inode: its lock is free, so without the identity check it reads as
 * released; with it, as unverifiable. A departed writer's tree is gone (its file is free). */
#define HELD  0
#define FREE  1
#define UNVER 2
#define NOHL  3
#define HPROBE(x) ((x) == N -> FREE : (nohl[x] -> NOHL : (hrep[x] -> (IDENTITY -> UNVER : FREE) : \
                   (tree[x] -> HELD : FREE))))
/* the pid table (qwen's rule), where the checker shares the recorded pid's namespace: the
 * recorded process (`run`) runs. Across pid namespaces (another pod) it says nothing. */
#define RUNS(x)  (TREE(x) && !((x) == 0 && supdead))
/* (b): no open file description can write the transcript. Live writers are left out on
 * purpose: a writer that has no description open at that instant (between appends, before
 * its first open) does not refuse the lease, so only (a) can keep a reclaim off it. */
#define NOWRITER (esc == 0)
/* Issue 38's rule for a plain or managed acquisition (identity.rs decide, acquire.rs decide):
 * (a) proven -- or, for a record with no holder lock, qwen's pid table says gone (plain only;
 * a superset of managed) -- and, with LEASE=1 or 3, (b) judged in the same step. A pid table that
 * says "runs" after a free holder lock only refuses more, and across pid namespaces it says
 * nothing: the model leaves it out. */
#define RECLAIMABLE(v) (RKIND(v) == ACTIVE && \
                        (HPROBE(RACTOR(v)) == FREE || (HPROBE(RACTOR(v)) == NOHL && !RUNS(RACTOR(v)))) && \
                        ((LEASE != 1 && LEASE != 3) || NOWRITER))

/* (1)+(3): every believed owner's exact active record is at L; so at most one owner.
 * (5): no write description of another owner token is open while an owner writes. */
#define OWN_OK(a) (!owner[a] || L == ownrec[a])
#define ESC_OK(a) (!owner[a] || esc == 0 || esc == ownrec[a])
#define OWNERS_OK (OWN_OK(0) && OWN_OK(1) && OWN_OK(2) && \
                   (owner[0] + owner[1] + owner[2] <= 1) && L <= MAXREC)
#define WRITERS_OK (ESC_OK(0) && ESC_OK(1) && ESC_OK(2))
#define INV (OWNERS_OK && WRITERS_OK)

/* ---------------------------------------------------------------- syscalls */

/* read(2) of a whole record; may fail with EIO (UNK) */
inline READ(P, out) {
  atomic {
    if
    :: out = P
    :: faults > 0 -> faults--; out = UNK
    fi
  }
}

/* link(2): never replaces. May fail without effect, or report EIO after effect. */
inline LINK(SRCP, DST, res) {
  atomic {
    if
    :: SRCP == 0 -> res = ENOENT
    :: SRCP != 0 && DST != 0 -> res = EEXIST
    :: SRCP != 0 && DST == 0 -> DST = SRCP; res = OK
    :: SRCP != 0 && DST == 0 && faults > 0 -> faults--; res = EIO
    :: SRCP != 0 && DST == 0 && faults > 0 -> faults--; DST = SRCP; res = EIO
    fi
  }
}

/* renameat2(RENAME_NOREPLACE) when NR, plain rename(2) otherwise. Moving a record is
 * checked like removing it; a plain rename over an existing file is an overwrite. */
inline RENAME(me, FROM, TO, res, NR) {
  atomic {
    if
    :: FROM == 0 -> res = ENOENT
    :: NR && FROM != 0 && TO != 0 -> res = EEXIST
    :: (!NR || TO == 0) && FROM != 0 ->
         assert(AUTH(me, FROM)); assert(TO == 0);
         TO = FROM; FROM = 0; res = OK
    :: (!NR || TO == 0) && FROM != 0 && faults > 0 -> faults--; res = EIO
    :: (!NR || TO == 0) && FROM != 0 && faults > 0 ->
         faults--; assert(AUTH(me, FROM)); assert(TO == 0);
         TO = FROM; FROM = 0; res = EIO
    fi
  }
}

/* unlink(2) of whatever is at P *now* (the ghost check is made at this instant) */
inline UNLINK(me, P, res) {
  atomic {
    if
    :: P == 0 -> res = ENOENT
    :: P != 0 -> assert(AUTH(me, P)); P = 0; res = OK
    :: P != 0 && faults > 0 -> faults--; res = EIO
    fi
  }
}

/* unlink of a second name whose record is still at L (release's put-back) */
inline UNLINK_ALIAS(P) {
  atomic { assert(P == 0 || P == L); P = 0 }
}

/* an acquire's claim check (acquire.rs check_transition_claim). On a caching host a plain lookup
 * may answer from a cached "no such file"; a lookup that found nothing may be cached,
 * one that found the claim replaces the cached absence. */
inline CLAIM_CHECK(out) {
  if
  :: CACHED_CLAIM && negc -> out = 0
  :: true -> READ(C, out);
     if
     :: CACHED_CLAIM -> negc = (out == 0)
     :: else -> skip
     fi
  fi
}

/* ---------------------------------------------------------------- primitives.rs */

/* install (§5.1): write+fsync temp, link(temp, target), reconcile an error by inode.
 * Collapsed to one step: the reconciliation only distinguishes our own inode. */
inline INSTALL(P, V, res) {
  atomic {
    if
    :: P != 0 -> res = INOT                                  /* EEXIST / other file  */
    :: P == 0 -> P = V; res = INST                           /* linked (or EIO after
                                                                effect, reconciled)  */
    :: P == 0 && faults > 0 -> faults--; res = IERR          /* EIO, nothing linked  */
    :: P == 0 && faults > 0 -> faults--; P = V; res = IERR   /* linked, but the
                                                                reconciliation read
                                                                failed: Err          */
    fi
  }
}

/* remove_exact: read, compare, unlink (two steps). rex: 0 done, 1 lost, 2 io */
inline REMOVE_EXACT(me, P, RAW) {
  READ(P, v);
  if
  :: v == 0 -> rex = 0
  :: v == RAW -> UNLINK(me, P, ures);
       if
       :: ures == OK || ures == ENOENT -> rex = 0
       :: else -> rex = 2
       fi
  :: v == UNK -> rex = 2
  :: v != 0 && v != RAW && v != UNK -> rex = 1
  fi
}

/* remove_owned: the record must be our active record (our owner id) */
inline REMOVE_OWNED(me, P, RAW) {
  READ(P, v);
  if
  :: v == RAW -> UNLINK(me, P, ures)
  :: else -> skip
  fi
}

/* ---------------------------------------------------------------- transition.rs */

/* §5.7 step 2: link SRCP into the missing L, waiting (bounded) for a claim-aware
 * candidate to leave; never removes or overwrites anything. */
inline LINK_CLAIMED_PRIMARY(SRCP, SRCRAW, CLRAW) {
  obs = 0;
  do
  :: true ->
     READ(C, v);
     if
     :: v != CLRAW -> lcp = LCP_FAIL; break            /* TransitionClaimLost */
     :: else -> skip
     fi;
     atomic {                                          /* ghost: a link that took effect */
       LINK(SRCP, L, lk);                              /* fills the gap, whatever it reports */
       if :: L == SRCRAW -> gap[me] = 0 :: else -> skip fi
     }
     if
     :: lk == OK -> lcp = LCP_OK; break
     :: else -> skip
     fi;
     READ(L, v);                                       /* classify_primary */
     if
     :: v == SRCRAW -> lcp = LCP_OK; break             /* error after effect */
     :: v == UNK -> lcp = LCP_UNCLEAR; break
     :: v == 0 -> lcp = LCP_FAIL; break
     :: v != 0 && v != UNK && v != SRCRAW && RKIND(v) == ACTIVE ->
          obs++;                                       /* candidate: wait */
          if
          :: obs >= WAIT -> lcp = LCP_FAIL; break      /* CandidateWaitExpired */
          :: else -> skip
          fi
     :: v != 0 && v != UNK && v != SRCRAW && RKIND(v) == SEALED ->
          lcp = LCP_FAIL; break                        /* PrimaryReplaced */
     fi
  od
}

/* §5.7 step 3 */
inline RESTORE(me, EXP, RETP, CLRAW) {
  LINK_CLAIMED_PRIMARY(RETP, EXP, CLRAW);
  if
  :: lcp == LCP_OK -> atomic { REMOVE_EXACT(me, RETP, EXP) }
  :: else -> skip
  fi
}

/* Transition::run. Sets stage; terr = 1 on error. */
inline TRANSITION(me, EXP, SRCP, SRCRAW, RETP, CLRAW) {
  terr = 0;
  atomic {
    RENAME(me, L, RETP, rr, 1);
    if :: RETP == EXP -> gap[me] = 1 :: else -> skip fi   /* ghost: L moved aside */
  }
  if
  :: rr != OK ->
     READ(L, v); READ(RETP, v2);
     if
     :: v2 == EXP -> skip                               /* took effect */
     :: v2 != EXP && v == EXP && v2 == 0 -> terr = 1    /* provably not moved */
     :: else -> stage = ST; terr = 1
     fi
  :: else -> skip
  fi;
  if
  :: terr == 0 ->
     stage = ST;
     READ(RETP, v);
     if
     :: v != EXP -> RESTORE(me, EXP, RETP, CLRAW); terr = 1
     :: else ->
        LINK_CLAIMED_PRIMARY(SRCP, SRCRAW, CLRAW);
        if
        :: lcp == LCP_OK -> stage = CM
        :: lcp == LCP_UNCLEAR -> stage = CM; terr = 1
        :: lcp == LCP_FAIL -> RESTORE(me, EXP, RETP, CLRAW); terr = 1
        fi
     fi
  :: else -> skip
  fi
}

/* §5.8 Transition::rollback; rb = 1 on failure */
inline ROLLBACK(me, EXP, SRCRAW, RETP, CLRAW) {
  obs2 = 0; uf = 0; rb = 0;
  do
  :: true ->
     READ(C, v);
     if
     :: v != CLRAW -> rb = 1; break
     :: else -> skip
     fi;
     READ(L, v);
     if
     :: v == 0 -> break
     :: v == UNK -> rb = 1; break
     :: v == SRCRAW ->
          atomic {
            UNLINK(me, L, ures);
            if :: ures == OK -> gap[me] = 1 :: else -> skip fi  /* ghost: L removed */
          }
          if
          :: ures == OK || ures == ENOENT -> break
          :: else -> uf++;
               if
               :: uf >= 2 -> rb = 1; break
               :: else -> skip
               fi
          fi
     :: v != 0 && v != UNK && v != SRCRAW && RKIND(v) == ACTIVE ->
          obs2++;
          if
          :: obs2 >= WAIT -> rb = 1; break
          :: else -> skip
          fi
     :: v != 0 && v != UNK && v != SRCRAW && RKIND(v) == SEALED -> rb = 1; break
     fi
  od;
  if
  :: rb == 0 ->
     READ(RETP, v);
     if
     :: v == EXP ->
        LINK_CLAIMED_PRIMARY(RETP, EXP, CLRAW);
        if
        :: lcp == LCP_OK -> atomic { REMOVE_EXACT(me, RETP, EXP) }
        :: else -> rb = 1
        fi
     :: else -> rb = 1
     fi
  :: else -> skip
  fi
}

/* release_transition_claim: exact bytes only; rcl = 1 on failure */
inline RELEASE_CLAIM(me, CLRAW) {
  rcl = 0;
  REMOVE_EXACT(me, C, CLRAW);
  if
  :: rex == 2 ->
     READ(C, v);
     if
     :: v == 0 || (v != UNK && v != CLRAW) -> skip
     :: else -> rcl = 1
     fi
  :: else -> skip
  fi
}

/* Transition::cleanup_after_failure */
inline CLEANUP_AFTER_FAILURE(me, EXP, SRCRAW, RETP, CLRAW) {
  if
  :: claim_inst ->
     READ(C, v);
     cex = (v == CLRAW);
     if
     :: stage == CM && cex -> ROLLBACK(me, EXP, SRCRAW, RETP, CLRAW)
     :: else -> skip
     fi;
     if
     :: cex ->
        READ(L, v);
        if
        :: stage == NS || v == EXP -> RELEASE_CLAIM(me, CLRAW)
        :: else -> retained[me] = 1
        fi
     :: else -> skip
     fi
  :: else -> skip
  fi
}

/* ---------------------------------------------------------------- release.rs */

/* read_owned, rename L -> L.released.<o>, verify, unlink. relres: 0 ok, 1 not owner, 2 io */
inline RELEASE_EXACT(me, RAW, RELP) {
  READ(L, v);
  if
  :: v != RAW && v != UNK -> relres = 1
  :: v == UNK -> relres = 2
  :: v == RAW ->
     RENAME(me, L, RELP, rr, 0);
     if
     :: rr == OK ->
        READ(RELP, v);
        if
        :: v == RAW -> UNLINK(me, RELP, ures); relres = 0
        :: else ->                            /* not ours: put it back untouched */
           LINK(RELP, L, lk);
           if
           :: lk == OK -> UNLINK_ALIAS(RELP)
           :: else -> skip
           fi;
           relres = 1
        fi
     :: else ->
        READ(L, v); READ(RELP, v2);
        if
        :: v != RAW && v != UNK && v2 == RAW -> UNLINK(me, RELP, ures); relres = 0
        :: v != RAW && v != UNK && v2 != RAW -> relres = 1
        :: else -> relres = 2
        fi
     fi
  fi
}

/* ---------------------------------------------------------------- acquire.rs */

/* The writer of actor 0's new lease may hand a write description to a process outside its
 * tree (ESCAPE; Outside closes it). Modelled when the writer starts: a (b) check that matters
 * is made when no running writer is left to hand one out (after (a) saw its tree gone, or
 * with our own record at L), and by then a hand-out made later is just as open; a check made
 * while the writer runs sees the hand-out or not as it was made before the writer started or
 * not at all -- both reachable. */
inline HANDOUT(me) {
  if
  :: ESCAPE && me == 0 && esc == 0 -> esc = ownrec[me]; escfrom = (REACH -> esc : 0)
  :: true -> skip
  fi
}

/* finish_acquisition: verify L is our exact record, fsync dir; on failure release
 * (two attempts). With LEASE=1, (b) is asked once more here, with our record at L: from
 * then on no other token can obtain a lease and hand a descriptor out, so a lease granted
 * now covers every path that led here (an install onto a missing L after a release whose
 * writer's descriptor escaped, a reclaim whose L another writer held in between). A
 * refusal gives the lock back. */
inline FINISH_ACQUISITION(me, RAW, RELP) {
  READ(L, v);
  if
  :: v == RAW && (LEASE != 1 || NOWRITER) ->
       atomic { assert(!ingap); owner[me] = 1; ownrec[me] = RAW;                /* (4) */
                assert(!(REACH && STALE[idx] != 0 && STALE[idx] == escfrom) ||  /* witness */
                       witness_reclaimed_after_handout);
                HANDOUT(me) }
  :: v == RAW && LEASE == 1 && !NOWRITER -> err = 1    /* transcript_open_for_writing */
  :: v == RAW && faults > 0 -> faults--; err = 1     /* shape check / dir fsync failed */
  :: v != RAW -> err = 1
  fi;
  if
  :: err ->
     att = 0;
     do
     :: att < 2 -> att++;
        RELEASE_EXACT(me, RAW, RELP);
        if
        :: relres != 2 -> break
        :: else -> skip
        fi
     :: att >= 2 -> break
     od
  :: else -> skip
  fi
}

/* take_over (§5.6, seed "Certified takeover" 1-7); SV = observed sealed record */
inline TAKE_OVER(me, RAW, SV, SRETP) {
  certified[me] = SV;
  stage = NS; claim_inst = 0; err = 0;
  if
  :: faults > 0 -> faults--; err = 1                   /* proof does not match: no claim */
  :: true -> skip
  fi;
  if
  :: !err ->
     atomic { READ(SRETP, v);                          /* require_absent(retired) */
       if :: v != 0 -> err = 1 :: else -> skip fi }
  :: else -> skip
  fi;
  if
  :: !err ->
     do
     :: true ->
        INSTALL(C, RAW, res);
        if
        :: res == INST -> claim_inst = 1
        :: res == INOT -> err = 1; break               /* TransitionClaimPresent */
        :: res == IERR -> claim_inst = 1; err = 1; break
        fi;
        READ(L, v);                                    /* step 4: exact sealed bytes */
        if :: v != SV -> err = 1; break :: else -> skip fi;
        if                                             /* proof revalidate */
        :: faults > 0 -> faults--; err = 1; break
        :: true -> skip
        fi;
        TRANSITION(me, SV, C, RAW, SRETP, RAW);
        if :: terr -> err = 1; break :: else -> skip fi;
        if                                             /* proof revalidate */
        :: faults > 0 -> faults--; err = 1; break
        :: true -> skip
        fi;
        READ(L, v);                                    /* verify_lock_identity */
        if :: v != RAW -> err = 1; break :: else -> skip fi;
        RELEASE_CLAIM(me, RAW);
        if :: rcl -> err = 1; break :: else -> skip fi;
        break
     od;
     if
     :: !err ->
        atomic { REMOVE_EXACT(me, SRETP, SV); owner[me] = 1; ownrec[me] = RAW; HANDOUT(me) }
     :: else ->
        CLEANUP_AFTER_FAILURE(me, SV, RAW, SRETP, RAW)
     fi
  :: else -> skip
  fi
}

/* acquire (§5.2): claim check, install, claim check, verify. An active record at L is
 * reclaimed when issue 38's rule allows it (RECLAIM), a sealed one taken over. With LEASE
 * >= 1 the lease (b) is asked first, before anything is written (acquire_naming): a refusal
 * stops every path to a new writer. */
inline ACQUIRE(me) {
  /* One step: the holder lock is taken before the record can name it, a private file locked
   * and then linked into place (HOLDERFIX=1); when, before our install, matters to nobody.
   * With HOLDERFIX=0 the file is created, then locked, and a status/recover/doctor probe
   * that lands in between holds the lock at that moment: the acquisition goes on and its
   * record names no holder lock (repro 3). Then the lease, asked before anything is written. */
  atomic {
    r = REC(me, gen, ACTIVE); idx = me * G + gen; gen++;
    tree[me] = 1; hrep[me] = 0;
    if
    :: !HOLDERFIX -> nohl[me] = 1
    :: true -> nohl[me] = 0
    fi;
    if
    :: LEASE >= 1 && !NOWRITER -> i = ACQ              /* transcript_open_for_writing */
    :: else -> i = 0
    fi
  }
  do
  :: i >= ACQ -> break                                 /* AcquireBudgetExhausted */
  :: i < ACQ ->
     i++;
     CLAIM_CHECK(v);                                   /* claim check #1 */
     if :: v != 0 -> break :: else -> skip fi;
     atomic {
       INSTALL(L, r, res);                             /* ghost: into a transition's gap? */
       ingap = (res == INST && (gap[0] || gap[1] || gap[2]))
     }
     if
     :: res == INST ->
        CLAIM_CHECK(v);                                /* claim check #2 */
        if
        :: v != 0 -> REMOVE_OWNED(me, L, r); break
        :: else -> err = 0; FINISH_ACQUISITION(me, r, REL[idx]); break
        fi
     :: res == IERR -> break
     :: res == INOT ->
        READ(L, v);
        if
        :: v == 0 -> skip                              /* missing: next attempt */
        :: v == UNK -> break
        :: v != 0 && v != UNK && RKIND(v) == ACTIVE -> /* live: conflict; stale: reclaim */
             sv = v; RECLAIM(me, sv); break
        :: v != 0 && v != UNK && RKIND(v) == SEALED ->
             sv = v; TAKE_OVER(me, r, sv, SRET[idx]); break
        fi
     fi
  od
}

/* §5.4 stale-owner reclaim of EXIST, the active record decide() judged (acquire.rs reclaim,
 * simplified: the guard is one step). The judgement and the move are one step: the code holds
 * the reclaim guard, judges the record again just before its rename (still_stale) and after
 * it, and links anything else straight back, so only the judged record ever leaves L. The
 * judgement is decide()'s, folded in (judging once, later, only adds behaviours). With
 * LEASE=1 the lease is part of that judgement: asked after (a) was seen, when the tree is gone
 * for good and every description it handed out already exists. */
inline RECLAIM(me, EXIST) {
  READ(C, v);                                          /* check_transition_claim */
  if
  :: v != 0 -> skip
  :: v == 0 ->
     atomic {
       if
       :: L == EXIST && (RECLAIMABLE(EXIST) || (!EVIDENCE && LABEL_RULE(me, EXIST))) ->
            if
            :: !EVIDENCE && LABEL_RULE(me, EXIST) -> assert(AUTH(me, L))   /* (2), labels */
            :: else -> assert(GONE(L) || live_holder_moved)  /* (2): never a live holder's */
            fi;
            STALE[idx] = L; L = 0; rr = OK
       :: L == EXIST && (RECLAIMABLE(EXIST) || (!EVIDENCE && LABEL_RULE(me, EXIST))) && faults > 0 ->
            faults--; rr = EIO                         /* the rename failed: nothing moved */
       :: L == EXIST && RECLAIMABLE(EXIST) && faults > 0 ->
            faults--; assert(GONE(L) || live_holder_moved); STALE[idx] = L; L = 0; rr = EIO  /* moved, then EIO:
                                                          the record stays aside (residue) */
       :: else -> rr = ENOENT                          /* live: conflict; raced: unavailable */
       fi
     };
     if
     :: rr == OK ->
        atomic {
          INSTALL(L, r, res);
          ingap = (res == INST && (gap[0] || gap[1] || gap[2]))
        }
        if
        :: res == INST ->
           CLAIM_CHECK(v);                             /* claim check #2 */
           if
           :: v != 0 -> REMOVE_OWNED(me, L, r)
           :: else -> err = 0; FINISH_ACQUISITION(me, r, REL[idx])
           fi
        :: else -> skip                                /* ReclaimRaced */
        fi
     :: else -> skip
     fi
  fi
}

/* ---------------------------------------------------------------- seal.rs */
inline SEAL(me) {
  r = ownrec[me]; s = r + 1;                           /* our sealed record */
  owner[me] = 0;                                       /* appends drained */
  stage = NS; claim_inst = 0; err = 0;
  READ(L, v);                                          /* read_owned */
  /* then the exclusivity proof (issue 27 item 3): a write description open anywhere refuses
   * the seal ("a writer may remain"); the active record stays, and the tree exits after it */
  if
  :: v != r || !NOWRITER -> skip                       /* NotOwner / unavailable / refused */
  :: v == r && NOWRITER ->
     if                                                /* proof read */
     :: faults > 0 -> faults--; err = 1
     :: true -> skip
     fi;
     if
     :: !err ->
        INSTALL(CAND[idx], s, res);
        if
        :: res != INST -> skip                         /* Err / exists: returned at once */
        :: res == INST ->
           do
           :: true ->
              atomic { READ(RET[idx], v);              /* require_absent(handoff) */
                if :: v != 0 -> err = 1 :: else -> skip fi };
              if :: err -> break :: else -> skip fi;
              READ(C, v);                              /* check_transition_claim */
              if :: v != 0 -> err = 1; break :: else -> skip fi;
              INSTALL(C, r, res);
              if
              :: res == INST -> claim_inst = 1
              :: res == INOT -> err = 1; break
              :: res == IERR -> claim_inst = 1; err = 1; break
              fi;
              READ(L, v);                              /* read_owned under the claim */
              if :: v != r -> err = 1; break :: else -> skip fi;
              if                                       /* proof revalidate */
              :: faults > 0 -> faults--; err = 1; break
              :: true -> skip
              fi;
              TRANSITION(me, r, CAND[idx], s, RET[idx], r);
              if :: terr -> err = 1; break :: else -> skip fi;
              if                                       /* proof revalidate */
              :: faults > 0 -> faults--; err = 1; break
              :: true -> skip
              fi;
              RELEASE_CLAIM(me, r);
              if :: rcl -> err = 1; break :: else -> skip fi;
              break
           od;
           if
           :: !err ->
              atomic { REMOVE_EXACT(me, RET[idx], r); REMOVE_EXACT(me, CAND[idx], s) }
           :: else ->
              CLEANUP_AFTER_FAILURE(me, r, s, RET[idx], r);
              atomic { REMOVE_EXACT(me, CAND[idx], s) }
           fi
        fi
     :: else -> skip
     fi
  fi
}

/* ---------------------------------------------------------------- recover.rs */

/* What `recover --writers-fenced --yes` moves aside (recover.rs active_primary): x's active
 * record v, judged once. The operator's shell is in another pid namespace than the holder (on
 * the node, in another pod): the pid table has no word, so RUNS never refuses here.
 *   1: issue 38 as the engine has it: not a held holder lock, not a refused lease, and not
 *      one the kernel proves reclaimable (kept: the next `run` takes it);
 *   2: before issue 38: anything but a held holder lock (the pid table only for a record
 *      with none), no lease;
 *   3: 1, and not while the transcript lock is held: the lock on the transcript's own inode
 *      that a holder's tree keeps (transcript_lock.rs), which no removed or recreated holder
 *      file can free. */
#define TLOCK_HELD (tree[0] || tree[1] || tree[2])
#define RECOVER_MOVES(v) \
  ((RECOVER == 2 && HPROBE(RACTOR(v)) != HELD && (HPROBE(RACTOR(v)) != NOHL || !RUNS(RACTOR(v)))) || \
   (RECOVER != 2 && HPROBE(RACTOR(v)) != HELD && HPROBE(RACTOR(v)) != FREE && NOWRITER && \
    (RECOVER != 3 || !TLOCK_HELD)))

proctype Operator() {
  byte v;
  /* plan: inspect L and judge it. A plan that moves nothing changes nothing, so the operator
   * is modelled as running when there is something to move (or never: an end state) */
end_wait:
  atomic { L != 0 && RKIND(L) == ACTIVE && RECOVER_MOVES(L) -> v = L }
  atomic {                              /* execute: move_into(L) by name, whatever is there */
    if
    :: L != 0 -> assert(GONE(L) || live_holder_moved); L = 0  /* (2): never a live holder's */
    :: else -> skip
    fi;
    v = 0
  }
}

/* ---------------------------------------------------------------- the environment */

/* A process outside every holder's tree (an SCM_RIGHTS receiver, a sidecar, a daemon started
 * through a service manager) holds a write description of the transcript that a writer of
 * actor 0 handed it (HANDOUT), and appends with it -- after that tree is gone too -- until it
 * closes it, at any moment or never. */
proctype Outside() {
end_wait:
  do
  :: esc != 0 -> esc = 0
  od
}

/* A backup tool or a cleanup script removes a live holder's holder file and creates one of
 * the same name: a new inode, whose lock nobody holds (repro 4). Once per run, actor 0's (the
 * actors are alike but for RESTART, SUPKILL and NEGCACHE, which make actor 0 the one
 * killed and actor 2 the other host). */
proctype Vandal() {
end_wait:
  tree[0] -> hrep[0] = 1
}

/* ---------------------------------------------------------------- actors */
/* forget scratch state after each operation so equal situations compare equal
 * (idx and r stay: they name the lease's side files and record); the holder's tree lives on
 * only while it holds a lease (a failed acquisition, a seal or a release ends it) */
#define FORGET skip; d_step { s = 0; sv = 0; v = 0; v2 = 0; res = 0; lk = 0; rr = 0; \
           lcp = 0; rex = 0; ures = 0; rcl = 0; rb = 0; stage = 0; obs = 0; obs2 = 0; \
           uf = 0; i = 0; att = 0; relres = 0; claim_inst = 0; cex = 0; err = 0; terr = 0; \
           ingap = 0; tree[me] = owner[me] }
proctype Actor(byte me) {
  byte gen, idx, r, s, sv, v, v2, res, lk, rr, lcp, rex, ures, rcl, rb;
  byte stage, obs, obs2, uf, i, att, relres;
  bool claim_inst, cex, err, terr;
  bool ingap;             /* ghost: our acquire installed L into another actor's gap */
  bool negc = CACHED_CLAIM; /* a cached "no such file" for L.claim (a `status` looked first);
                             kept across operations, as a client cache is */
  /* a restarted container starts only once its predecessor is dead (or never ran out) */
end_start:
  (PRED(me) == N || SIDECAR || dead[PRED(me)] || finished[PRED(me)]);
  do
  :: !owner[me] && gen < G -> ACQUIRE(me); FORGET
  :: owner[me] -> SEAL(me); FORGET
  :: owner[me] -> owner[me] = 0; RELEASE_EXACT(me, ownrec[me], REL[idx]); FORGET
  :: RESTART && me == 0 && owner[me] ->                /* SIGKILL of the whole tree */
       atomic { owner[me] = 0; dead[me] = 1; tree[me] = 0 }; break
  :: SUPKILL && me == 0 && owner[me] && !supdead ->    /* SIGKILL of `run` alone: its writer */
       supdead = 1;                                    /* appends on, then exits */
       atomic { owner[me] = 0; tree[me] = 0 }; break
  :: !owner[me] && gen >= G -> break
  od;
  finished[me] = 1
}

/* properties (1), (3) and (5), checked in every reachable state; (2) at every move and
 * removal; (4) where an ordinary acquire returns a lease: it did not install L into the gap
 * a claim holder's transition left (the claim checks must have seen that claim) */
active proctype monitor() {
end: atomic { !INV -> assert(OWNERS_OK); assert(WRITERS_OK || two_writers) }
}

init {
  atomic {
#if SEED
    if
    :: L = 0
    :: L = REC(N, 0, SEALED)        /* a sealed record left by a writer that has exited */
#if SEED >= 2
    :: L = REC(N, 0, ACTIVE)        /* an active record whose holder's tree is gone */
    :: ESCAPE -> L = REC(N, 0, ACTIVE); esc = L; escfrom = (REACH -> L : 0)
                                    /* ... and its writer's descriptor is still open outside */
#endif
    fi;
#endif
    run Actor(0); run Actor(1); run Actor(2);
#if ESCAPE
    run Outside();
#endif
#if REPLACE
    run Vandal();
#endif
#if RECOVER
    run Operator();
#endif
  }
}
