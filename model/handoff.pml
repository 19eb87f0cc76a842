/*
 * handoff.pml -- Promela model of writerctl's session-writer lock-file protocol
 * (seed 001 "Fixed claim", "Sealing", "Certified takeover", "Failure contract";
 * QWEN_FORMAT §5.1-§5.8, §5.10; src/lockfile/{primitives,acquire,transition,seal,release}.rs).
 *
 * Files are byte variables holding a record value (0 = no file). A record value names
 * one owner token (actor, generation) and a kind (active / sealed). Every filesystem
 * call is one atomic step; a check-then-act that the code does in two calls is two
 * steps here. See README.md for what is abstracted away.
 *
 * Tunables (pass with spin -D...):
 *   G     owner tokens (acquisitions) per actor       (default 2)
 *   MAXF  injected faults per run, across all actors   (default 1)
 *   WAIT  candidate observations before giving up      (default 2; code: 100, qwen: 20)
 *   ACQ   ordinary-acquire attempts                    (default 2; code: 8)
 *   SEED  1: L may start holding a sealed record left by a departed writer (default 1)
 *   RESTART 1: actor 0 may crash (SIGKILL, an OOM kill) while it owns the session, its
 *         record left at L; actor 1 is the same container of the same Pod, started by the
 *         kubelet only once actor 0 is dead, and may reclaim that record under the
 *         container_restarted rule (issue 18; src/lockfile/pod.rs) (default 0)
 *   SIDECAR 1 (with RESTART=1): actor 1 carries actor 0's pod labels (the four
 *         WRITERCTL_POD_* values) but is not its restarted container: a sidecar, an ephemeral
 *         debug container, a process that copied the environment. It may start, and try the
 *         reclaim, while actor 0 lives (issue 27, reproduction 1) (default 0)
 *   EVIDENCE 0: the reclaim rests on the labels alone (the code before issue 27); 1: on
 *         positive evidence that the recorded holder is dead, a kernel lock its tree held
 *         that the kernel drops only when the last holder exits (issue 27 item 1) (default 1)
 *   NEGCACHE 1: actor 2 runs on another host of a network filesystem whose client caches a
 *         lookup that found nothing (a negative dentry: NFS lookupcache=all, FUSE
 *         negative_timeout), and its acquire's claim checks are plain lookups that may
 *         answer "no claim" from that cache while the claim exists on the server: the code
 *         before issue 27 on NFS (reproduction 4). check.sh expects property (4) to fail.
 *         With 0 every claim check reads what the server holds: a local disk, or a check
 *         the server arbitrates (a directory listing read after opening the directory, an
 *         exclusive create), as issue 27 item 4 requires on a network filesystem (default 0)
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
#define MAXREC        REC(N, G - 1, SEALED)   /* actor N = the departed sealer */
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
/* link_claimed_primary outcomes */
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

/* ---------------------------------------------------------------- ghost state */
bool owner[N];          /* set when acquire/takeover returns a lease; cleared when
                           the lease starts a release or a seal (appends stop first) */
byte ownrec[N];         /* the record value of that lease                */
byte certified[N];      /* the sealed record this actor validated under its claim */
bool retained[N];       /* a transition ended with its claim deliberately retained */
bool dead[N];           /* the actor's process was killed (RESTART): it never acts again */
bool finished[N];           /* the actor finished normally */
bool gap[N];            /* actor a moved L aside under its claim (transition, rollback) and
                           has not linked anything back: L is missing on its account */

/* (2) a record may only be removed / moved by the actor that wrote it, or by the
 *     certified taker of that exact sealed record. */
#define AUTH(me, v) ((v) == 0 || RACTOR(v) == (me) || (v) == certified[me] || RESTARTED_FROM(me, v))
/* the truth the restart rule must rest on: an active record of our predecessor, which is
 * dead or has exited (the kubelet runs one instance of a named container at a time; the
 * kernel drops a lock when its last holder exits) */
#define RESTARTED_FROM(me, v) (PRED(me) != N && RACTOR(v) == PRED(me) && \
                               (dead[PRED(me)] || finished[PRED(me)]) && RKIND(v) == ACTIVE)
/* what the code decides on: the record carries our pod labels (any record of actor PRED),
 * and, with EVIDENCE, the holder's kernel lock is gone because it died (the model's crash;
 * a record an exited holder left is left to the other rules, which keeps the search as
 * small as before the evidence) */
#define RECLAIM_RULE(me, v) (PRED(me) != N && RACTOR(v) == PRED(me) && RKIND(v) == ACTIVE && \
                             (!EVIDENCE || dead[PRED(me)]))

/* (1)+(3): every believed owner's exact active record is at L; so at most one owner. */
#define OWN_OK(a) (!owner[a] || L == ownrec[a])
#define INV (OWN_OK(0) && OWN_OK(1) && OWN_OK(2) && \
             (owner[0] + owner[1] + owner[2] <= 1) && L <= MAXREC)

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

/* an acquire's claim check (acquire.rs check_claim). On a caching host a plain lookup
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
     :: v != CLRAW -> lcp = LCP_FAIL; break            /* ClaimLost */
     :: else -> skip
     fi;
     LINK(SRCP, L, lk);
     if
     :: lk == OK -> lcp = LCP_OK; gap[me] = 0; break
     :: else -> skip
     fi;
     READ(L, v);                                       /* classify_primary */
     if
     :: v == SRCRAW -> lcp = LCP_OK; gap[me] = 0; break  /* error after effect */
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

/* release_claim: exact bytes only; rcl = 1 on failure */
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

/* finish_acquisition: verify L is our exact record, fsync dir; on failure release
 * (two attempts). */
inline FINISH_ACQUISITION(me, RAW, RELP) {
  READ(L, v);
  if
  :: v == RAW -> atomic { assert(!ingap); owner[me] = 1; ownrec[me] = RAW }  /* (4) */
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
        :: res == INOT -> err = 1; break               /* ClaimPresent */
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
        atomic { REMOVE_EXACT(me, SRETP, SV); owner[me] = 1; ownrec[me] = RAW }
     :: else ->
        CLEANUP_AFTER_FAILURE(me, SV, RAW, SRETP, RAW)
     fi
  :: else -> skip
  fi
}

/* acquire (§5.2): claim check, install, claim check, verify */
inline ACQUIRE(me) {
  r = REC(me, gen, ACTIVE); idx = me * G + gen; gen++;
  i = 0;
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
        :: v != 0 && v != UNK && RKIND(v) == ACTIVE -> break      /* live: conflict */
        :: v != 0 && v != UNK && RKIND(v) == SEALED ->
             sv = v; TAKE_OVER(me, r, sv, SRET[idx]); break
        fi
     fi
  od
}

/* reclaim under the container_restarted rule (acquire.rs reclaim, simplified: the guard is
 * one step): only an active record of our dead predecessor is moved aside, then ours is
 * installed with the usual claim checks and verification. */
inline RECLAIM_RESTARTED(me) {
  r = REC(me, gen, ACTIVE); idx = me * G + gen; gen++;
  READ(C, v);                                          /* claim check #1 */
  if
  :: v != 0 -> skip
  :: v == 0 ->
     /* The guard: judge the record at L and move it aside as one step. The code holds the
      * reclaim guard, and after its rename re-validates what it moved and links anything
      * else straight back (reclaim_under_guard), so only the judged record ever leaves L. */
     atomic {
       READ(L, v);
       if
       :: v != 0 && v != UNK && RECLAIM_RULE(me, v) -> RENAME(me, L, STALE[idx], rr, 1)
       :: else -> rr = ENOENT                          /* nothing to reclaim */
       fi
     };
     if
     :: rr == OK ->
        INSTALL(L, r, res);
        if
        :: res == INST ->
           READ(C, v);                                 /* claim check #2 */
           if
           :: v != 0 -> REMOVE_OWNED(me, L, r)
           :: else -> err = 0; FINISH_ACQUISITION(me, r, REL[idx])
           fi
        :: else -> skip
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
  if
  :: v != r -> skip                                    /* NotOwner / unavailable */
  :: v == r ->
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
              READ(C, v);                              /* check_claim */
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

/* ---------------------------------------------------------------- actors */
/* forget scratch state after each operation so equal situations compare equal
 * (idx and r stay: they name the lease's side files and record) */
#define FORGET skip; d_step { s = 0; sv = 0; v = 0; v2 = 0; res = 0; lk = 0; rr = 0; \
           lcp = 0; rex = 0; ures = 0; rcl = 0; rb = 0; stage = 0; obs = 0; obs2 = 0; \
           uf = 0; i = 0; att = 0; relres = 0; claim_inst = 0; cex = 0; err = 0; terr = 0; \
           ingap = 0 }
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
  :: PRED(me) != N && !owner[me] && gen < G -> RECLAIM_RESTARTED(me); FORGET
  :: owner[me] -> SEAL(me); FORGET
  :: owner[me] -> owner[me] = 0; RELEASE_EXACT(me, ownrec[me], REL[idx]); FORGET
  :: RESTART && me == 0 && owner[me] -> atomic { owner[me] = 0; dead[me] = 1 }; break  /* SIGKILL */
  :: !owner[me] && gen >= G -> break
  od;
  finished[me] = 1
}

/* properties (1) and (3), checked in every reachable state; (2) at every move and removal;
 * (4) where an ordinary acquire returns a lease: it did not install L into the gap a claim
 * holder's transition left (the claim checks must have seen that claim) */
active proctype monitor() {
end: atomic { !INV -> assert(false) }
}

init {
  atomic {
#if SEED
    if
    :: L = 0
    :: L = REC(N, 0, SEALED)        /* a sealed record left by a writer that has exited */
    fi;
#endif
    run Actor(0); run Actor(1); run Actor(2)
  }
}
