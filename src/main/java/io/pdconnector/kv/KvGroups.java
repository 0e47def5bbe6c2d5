package io.pdconnector.kv;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * The KV cache groups an engine keeps a request's blocks in ({@code pd.model.kv-groups}: each {@code full} or
 * {@code window:<tokens>}, then {@code /<layers>}), laid out in a block by reach: the full-attention groups' layers
 * first, then the windows' from the widest down (ties in the order named), each group's layers in model order.
 *
 * <p>An engine's sliding-window group keeps only a request's last blocks; the vLLM plugin fills a window group's
 * layers for the last {@code ceil(window / blockTokens) + 1} blocks of the request and leaves them stale in the
 * older ones. So a block at distance {@code d} from the end of a request needs the groups that reach it, which the
 * order makes a prefix of the block: its first {@link #segmentsNeeded} segments, one segment a group.
 */
public record KvGroups(List<Group> inBlockOrder) {

    /** One group: {@code window} tokens (0 for full attention) over {@code layers} layers. */
    public record Group(int window, int layers) {

        boolean full() {
            return window == 0;
        }

        /** How many of a request's last blocks this group's layers are read for; every block for full attention. */
        int reachBlocks(int blockTokens) {
            return full() ? Integer.MAX_VALUE : (window + blockTokens - 1) / blockTokens + 1;
        }
    }

    public KvGroups {
        inBlockOrder = List.copyOf(inBlockOrder);
    }

    /** One group of full attention over every layer: a block is one segment, always read whole. */
    public static KvGroups whole(int layers) {
        return new KvGroups(List.of(new Group(0, layers)));
    }

    /**
     * {@code spec} as pd.model.kv-groups names it ({@link ModelGeometry#KV_GROUPS}); IllegalArgumentException when
     * its layers do not add up to the model's {@code layers}.
     */
    public static KvGroups parse(String spec, int layers) {
        List<Group> named = new ArrayList<>();
        int total = 0;
        for (String item : spec.split(",")) {
            int slash = item.indexOf('/');
            String kind = item.substring(0, slash);
            int count = Integer.parseInt(item.substring(slash + 1));
            named.add(new Group(kind.equals("full") ? 0 : Integer.parseInt(kind.substring("window:".length())), count));
            total += count;
        }
        if (total != layers) {
            throw new IllegalArgumentException("KV cache groups " + spec + " hold " + total + " layers, the model "
                    + layers);
        }
        List<Group> byReach = new ArrayList<>(named);
        byReach.sort(Comparator.comparing((Group g) -> !g.full()).thenComparing(Group::window,
                Comparator.reverseOrder()));
        return new KvGroups(byReach);
    }

    public int segments() {
        return inBlockOrder.size();
    }

    /** Layers of the segments before {@code segment}: where it starts in a block, in layers. */
    public int layersBefore(int segment) {
        int layers = 0;
        for (int s = 0; s < segment; s++) {
            layers += inBlockOrder.get(s).layers();
        }
        return layers;
    }

    public int layersOf(int segment) {
        return inBlockOrder.get(segment).layers();
    }

    /**
     * For each of a request's {@code blocks} blocks, how many leading segments a reader needs: every segment of
     * its last blocks, the full groups' alone of the blocks every window has left.
     */
    public int[] segmentsNeeded(int blocks, int blockTokens) {
        int[] need = new int[blocks];
        for (int i = 0; i < blocks; i++) {
            int fromEnd = blocks - 1 - i;
            int s = 0;
            while (s < inBlockOrder.size() && inBlockOrder.get(s).reachBlocks(blockTokens) > fromEnd) {
                s++;
            }
            need[i] = s;
        }
        return need;
    }
}
