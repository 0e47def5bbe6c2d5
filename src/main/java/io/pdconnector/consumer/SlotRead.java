package io.pdconnector.consumer;

import io.pdconnector.transfer.ReadRequest;
import java.util.List;

/** One posted slot READ on one prefill rank, shared by every pull in {@code pulls} (L5). */
record SlotRead(ReadRequest request, List<Pull> pulls, long postedAtMillis) {
}
