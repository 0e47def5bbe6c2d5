/*
 * model/epochs.pml -- D's epoch tables (docs/design.md, "D's blocks in the engine's hands").
 *
 * One D block, one pull A that got it, and the engine beside D that copies A's block out of D's KV
 * file and trusts the copy without waiting for its release when the block's epoch, read after the
 * copy, is still A's (the reply's blocks_epoch). Meanwhile D may let the block go (pd.consumer.retention
 * passed) and give it to a later pull B, or restart and make a new file at the same path, in which a
 * new pull B gets the block. A block is two words, written one after the other by B's READ and read one
 * after the other by the engine's copy, so a copy can see half of A and half of B.
 *
 * Property (assert): a copy the engine trusts holds A's bytes only. And: with nothing happening to
 * the block, the engine trusts its copy (the check never fails a load for nothing).
 *
 * Mutations (each must make the assert fail):
 *   MUT_E1  D stamps the block's epoch after B's bytes are in it, not before (ConsumerState#giveBlocks
 *           stamps before any READ is posted)
 *   MUT_E2  the engine reads the epoch before its copy, not after (kv_places.FileKv.load)
 *   MUT_E3  a restarted D's epochs start where its predecessor's did (ConsumerState: a random start)
 *   MUT_E4  the engine maps the epochs and the bytes separately, each at the file the path names when
 *           it looks (the table is in the same file as the blocks: one mapping for both)
 *
 * Spin interleaves whole statements: the memory is sequentially consistent. What makes the same
 * reasoning hold on real hardware (x86-64's loads in order, stores in order; the fence after the stamp) is
 * the design document's, not the model's.
 */

#define A 1
#define B 2

byte word[4];        /* the block's two words in file 0 ([0], [1]) and in file 1, a restarted D's ([2], [3]) */
int epoch[2];        /* the block's word in file f's epoch table */
byte path = 0;       /* the file at D's path: 1 once D restarted */
int next = 1;        /* the next epoch D stamps */
int replyEpoch;      /* the pull reply's blocks_epoch */
bool replied;
bool touched;        /* D let the block go, or restarted */
bool trusted;

/* B gets the block in file f: stamped with a new epoch before its READ lands (two words) */
inline laterPull(f) {
#ifndef MUT_E1
  epoch[f] = next; printf("@ D stamps the block of file %d for B: epoch %d\n", f, next);
#endif
  word[2 * f] = B; printf("@ B's READ writes word 0 of file %d\n", f);
  word[2 * f + 1] = B; printf("@ B's READ writes word 1 of file %d\n", f);
#ifdef MUT_E1
  epoch[f] = next; printf("@ D stamps the block of file %d for B: epoch %d\n", f, next);
#endif
  next++
}

active proctype D() {
  epoch[0] = next; replyEpoch = next; next++;
  printf("@ D stamps the block for A: epoch %d\n", replyEpoch);
  word[0] = A; word[1] = A; printf("@ A's READ lands\n");
  printf("@ D replies to the pull: blocks_epoch %d\n", replyEpoch); replied = true;
  if
  :: printf("@ the engine's release comes in time: D keeps the block\n")
  :: touched = true; printf("@ retention passes: D frees the block\n"); laterPull(0)
  :: touched = true; path = 1; printf("@ D restarts: a new, zeroed file at the path\n");
#ifdef MUT_E3
     next = 1;
#else
     next = 100;
#endif
     laterPull(1)
  fi
}

active proctype Engine() {
  byte f, g, got0, got1;
  int seen;
  replied;
#ifdef MUT_E4
  g = path; printf("@ the engine maps the epoch table at the path: file %d\n", g);
  f = path; printf("@ the engine maps the blocks at the path: file %d\n", f);
#else
  f = path; g = f; printf("@ the engine maps the file at the path: file %d\n", f);
#endif
#ifdef MUT_E2
  seen = epoch[g]; printf("@ the engine reads the epoch: %d\n", seen);
#endif
  got0 = word[2 * f]; printf("@ the engine copies word 0: %d\n", got0);
  got1 = word[2 * f + 1]; printf("@ the engine copies word 1: %d\n", got1);
#ifndef MUT_E2
  seen = epoch[g]; printf("@ the engine reads the epoch: %d\n", seen);
#endif
  if
  :: seen == replyEpoch -> trusted = true; printf("@ the engine trusts its copy\n");
     assert(got0 == A && got1 == A)
  :: else -> printf("@ the engine fails the load: kv-released-early\n")
  fi;
  assert(trusted || touched)
}
