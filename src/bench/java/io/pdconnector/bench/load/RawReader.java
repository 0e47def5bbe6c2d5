package io.pdconnector.bench.load;

import com.fasterxml.jackson.databind.JsonNode;
import io.pdconnector.kv.ModelGeometry;
import io.pdconnector.reference.ReferenceEngine;
import io.pdconnector.transfer.DescriptorList;
import io.pdconnector.transfer.PreparedDescriptors;
import io.pdconnector.transfer.ReadRequest;
import io.pdconnector.transfer.RegisteredRegion;
import io.pdconnector.transfer.TransferAgent;
import io.pdconnector.transfer.TransferEngine;
import io.pdconnector.transfer.TransferStatus;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * The baseline the pull is measured against: this process, as a NIXL agent of its own, READs the
 * very blocks P holds for prefilled requests, by the descriptors P publishes at {@code GET
 * /v1/handshake} (the same P memory, the same block ids, into registered memory here), with no lease
 * check, no step loop and no HTTP. {@code concurrency} requests are prefilled on P and held; READs
 * of their blocks are kept that many in flight, each into its own landing area, until {@code reads}
 * are done or time runs out; then P's requests are aborted. The first READ of each request is
 * compared with the reference KV of its prompt. Every NIXL call runs on one thread (agents are
 * confined to the thread that made them).
 */
public final class RawReader {

    private static final long READ_DEADLINE_NS = 30_000_000_000L;

    private final TransferEngine engine;
    private final Http http;
    private final URI producer;
    private int phase;

    public RawReader(TransferEngine engine, Http http, URI producer) {
        this.engine = engine;
        this.http = http;
        this.producer = producer;
    }

    /** P's rank as published. */
    record Rank(String agentName, byte[] metadata, long kvBase, int numBlocks, long blockBytes, int tpSize,
            ModelGeometry geometry) {
    }

    /** P's model geometry, from its handshake. */
    public static ModelGeometry geometry(Http http, URI producer) throws Exception {
        return ranks(http, producer).getFirst().geometry();
    }

    static List<Rank> ranks(Http http, URI producer) throws Exception {
        Http.Reply r = http.get(producer, "/v1/handshake");
        if (r.status() != 200) {
            throw new IllegalStateException("GET " + producer + "/v1/handshake answered " + r.status() + " " + r.text());
        }
        List<Rank> ranks = new ArrayList<>();
        for (JsonNode n : r.json()) {
            JsonNode g = n.path("geometry");
            ModelGeometry geometry = new ModelGeometry(g.path("layers").asInt(), g.path("kvHeads").asInt(),
                    g.path("headDim").asInt(), g.path("blockTokens").asInt(), g.path("dtypeBytes").asInt());
            int tp = n.path("tpSize").asInt();
            ranks.add(new Rank(n.path("agentName").asText(), Base64.getDecoder().decode(n.path("agentMetadata").asText()),
                    n.path("kvBase").asLong(), n.path("numBlocks").asInt(), geometry.blockBytes(tp), tp, geometry));
        }
        return ranks;
    }

    /**
     * Prefills {@code concurrency} prompts of {@code workload} on P, READs their blocks {@code reads}
     * times (after {@code warmup} unrecorded READs) within {@code maxNanos}, aborts the prompts on P.
     */
    public RawReadResult run(Workload workload, int concurrency, int reads, int warmup, long maxNanos, Progress progress,
            String label) throws Exception {
        List<Rank> ranks = ranks(http, producer);
        List<Workload.Request> held = new ArrayList<>();
        List<int[][]> blocks = new ArrayList<>();
        try {
            for (int i = 0; i < concurrency; i++) {
                Workload.Request req = workload.request(i);
                Http.Reply p = http.post(producer, "/v1/producer/prefill", Map.of("request_id", req.id(), "token_ids",
                        req.tokens(), "kv_transfer_params", Map.of("do_remote_decode", true)));
                if (p.status() != 200) {
                    throw new IllegalStateException("raw READ: prefill of " + req.id() + " answered " + p.status() + " "
                            + p.text());
                }
                held.add(req);
                JsonNode ids = p.json().path("kv_transfer_params").path("remote_block_ids");
                int[][] perRank = new int[ranks.size()][];
                for (int q = 0; q < ranks.size(); q++) {
                    JsonNode list = ids.path(q);
                    perRank[q] = new int[list.size()];
                    for (int k = 0; k < list.size(); k++) {
                        perRank[q][k] = list.path(k).asInt();
                    }
                }
                blocks.add(perRank);
            }
            String agentName = "load-raw-" + ProcessHandle.current().pid() + "-" + phase++;
            CompletableFuture<RawReadResult> result = new CompletableFuture<>();
            Thread.ofPlatform().name("raw-read").start(() -> {
                try {
                    result.complete(readLoop(agentName, ranks, held, blocks, reads, warmup, maxNanos, progress, label));
                } catch (Throwable t) {
                    result.completeExceptionally(t);
                }
            });
            try {
                return result.get(maxNanos + 2 * READ_DEADLINE_NS + 60_000_000_000L, TimeUnit.NANOSECONDS);
            } catch (ExecutionException e) {
                throw e.getCause() instanceof Exception ex ? ex : e;
            }
        } finally {
            for (Workload.Request req : held) {
                try {
                    http.delete(producer, "/v1/producer/requests/" + req.id());
                } catch (Exception e) {
                    progress.note("raw READ: abort of " + req.id() + " on P failed: " + e);
                }
            }
        }
    }

    private RawReadResult readLoop(String agentName, List<Rank> ranks, List<Workload.Request> held,
            List<int[][]> blocks, int reads, int warmup, long maxNanos, Progress progress, String label) {
        int slots = held.size();
        int maxBlocks = blocks.stream().mapToInt(b -> b[0].length).max().orElseThrow();
        TransferAgent agent = engine.createAgent(agentName);
        List<String> remotes = new ArrayList<>();
        List<PreparedDescriptors> prepared = new ArrayList<>();
        List<RegisteredRegion> regions = new ArrayList<>();
        try {
            int nr = ranks.size();
            PreparedDescriptors[] local = new PreparedDescriptors[nr];
            PreparedDescriptors[] remote = new PreparedDescriptors[nr];
            RegisteredRegion[] landing = new RegisteredRegion[nr];
            for (int q = 0; q < nr; q++) {
                Rank rank = ranks.get(q);
                String name = agent.loadRemoteMetadata(rank.metadata());
                remotes.add(name);
                remote[q] = agent.prepareRemote(name, DescriptorList.contiguous(rank.kvBase(), rank.blockBytes(),
                        rank.numBlocks()));
                prepared.add(remote[q]);
                landing[q] = agent.allocate("raw-landing-" + q, (long) slots * maxBlocks * rank.blockBytes());
                regions.add(landing[q]);
                local[q] = agent.prepareLocal(DescriptorList.contiguous(landing[q].address(), rank.blockBytes(),
                        slots * maxBlocks));
                prepared.add(local[q]);
            }
            int[][][] localIdx = new int[slots][nr][];
            for (int s = 0; s < slots; s++) {
                for (int q = 0; q < nr; q++) {
                    int n = blocks.get(s)[q].length;
                    localIdx[s][q] = new int[n];
                    for (int k = 0; k < n; k++) {
                        localIdx[s][q][k] = s * maxBlocks + k;
                    }
                }
            }
            ReadRequest[][] inFlight = new ReadRequest[slots][nr];
            long[] postedAt = new long[slots];
            boolean[] busy = new boolean[slots];
            boolean[] checked = new boolean[slots];
            long mismatched = 0;
            var histogram = LatencySummary.newHistogram();
            long bytes = 0;
            int posted = 0;
            int done = 0;
            int total = warmup + reads;
            long start = System.nanoTime();
            long measuredFrom = warmup == 0 ? start : -1;
            long end = start + maxNanos;
            progress.start("raw READ " + label, total);
            while (done < posted || posted < total && System.nanoTime() < end) {
                for (int s = 0; s < slots; s++) {
                    if (!busy[s]) {
                        if (posted < total && System.nanoTime() < end) {
                            postedAt[s] = System.nanoTime();
                            for (int q = 0; q < nr; q++) {
                                inFlight[s][q] = agent.postRead(local[q], localIdx[s][q], remote[q], blocks.get(s)[q],
                                        null);
                            }
                            busy[s] = true;
                            posted++;
                        }
                        continue;
                    }
                    boolean all = true;
                    for (int q = 0; q < nr; q++) {
                        if (inFlight[s][q] != null) {
                            if (agent.status(inFlight[s][q]) == TransferStatus.DONE) {
                                agent.release(inFlight[s][q]);
                                inFlight[s][q] = null;
                            } else {
                                all = false;
                            }
                        }
                    }
                    long now = System.nanoTime();
                    if (all) {
                        busy[s] = false;
                        done++;
                        progress.tick();
                        if (done > warmup) {
                            histogram.recordValue(Math.max(1, now - postedAt[s]));
                            for (int q = 0; q < nr; q++) {
                                bytes += blocks.get(s)[q].length * ranks.get(q).blockBytes();
                            }
                        } else if (done == warmup) {
                            measuredFrom = now;
                        }
                        if (!checked[s]) {
                            checked[s] = true;
                            mismatched += mismatches(landing, ranks, held.get(s).tokens(), blocks.get(s), s, maxBlocks);
                        }
                    } else if (now - postedAt[s] > READ_DEADLINE_NS) {
                        throw new IllegalStateException("a raw READ took over " + READ_DEADLINE_NS / 1_000_000_000
                                + " s");
                    }
                }
                Thread.onSpinWait();
            }
            long measured = measuredFrom < 0 ? 0 : System.nanoTime() - measuredFrom;
            progress.finishLine();
            return new RawReadResult(slots, histogram.getTotalCount(), bytes, measured, histogram, mismatched);
        } finally {
            prepared.forEach(agent::release);
            regions.forEach(agent::deregister);
            remotes.forEach(agent::invalidateRemote);
            agent.close();
        }
    }

    /** Blocks of slot {@code s}'s landing area that are not the reference KV of its prompt. */
    private static long mismatches(RegisteredRegion[] landing, List<Rank> ranks, int[] tokens, int[][] blocks, int s,
            int maxBlocks) {
        long bad = 0;
        for (int q = 0; q < ranks.size(); q++) {
            Rank rank = ranks.get(q);
            ReferenceEngine reference = new ReferenceEngine(rank.geometry());
            for (int k = 0; k < blocks[q].length; k++) {
                MemorySegment got = landing[q].segment().asSlice((long) (s * maxBlocks + k) * rank.blockBytes(),
                        rank.blockBytes());
                byte[] expected = reference.expectedBlock(tokens, k, rank.tpSize(), q);
                if (got.mismatch(MemorySegment.ofArray(expected)) != -1) {
                    bad++;
                }
            }
        }
        return bad;
    }
}
