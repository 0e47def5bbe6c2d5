package io.pdconnector.transfer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.Test;

class TransferExceptionTest {

    @Test
    void everyNativeStatusMapsToATypedExceptionNamingTheCallAndTheCode() {
        Map<NativeStatus, Class<? extends TransferException>> expected = Map.ofEntries(
                Map.entry(NativeStatus.INVALID_PARAM, TransferException.InvalidArgument.class),
                Map.entry(NativeStatus.BACKEND, TransferException.BackendFailure.class),
                Map.entry(NativeStatus.INVALID_STATE, TransferException.InvalidState.class),
                Map.entry(NativeStatus.NATIVE_EXCEPTION, TransferException.NativeFailure.class),
                Map.entry(NativeStatus.NO_TELEMETRY, TransferException.Unsupported.class),
                Map.entry(NativeStatus.NOT_FOUND, TransferException.NotFound.class),
                Map.entry(NativeStatus.NOT_POSTED, TransferException.InvalidState.class),
                Map.entry(NativeStatus.MISMATCH, TransferException.InvalidState.class),
                Map.entry(NativeStatus.NOT_ALLOWED, TransferException.InvalidState.class),
                Map.entry(NativeStatus.REPOST_ACTIVE, TransferException.RepostActive.class),
                Map.entry(NativeStatus.UNKNOWN, TransferException.NativeFailure.class),
                Map.entry(NativeStatus.NOT_SUPPORTED, TransferException.Unsupported.class),
                Map.entry(NativeStatus.REMOTE_DISCONNECT, TransferException.RemoteDisconnected.class),
                Map.entry(NativeStatus.CANCELED, TransferException.Canceled.class),
                Map.entry(NativeStatus.HELPER_NO_MEMORY, TransferException.OutOfNativeMemory.class),
                Map.entry(NativeStatus.HELPER_BUFFER_TOO_SMALL, TransferException.BufferTooSmall.class),
                Map.entry(NativeStatus.HELPER_ARGUMENT_REJECTED, TransferException.InvalidArgument.class),
                Map.entry(NativeStatus.HELPER_FILE_ERROR, TransferException.FileError.class),
                Map.entry(NativeStatus.HELPER_FILE_IN_USE, TransferException.FileInUse.class));
        for (var e : expected.entrySet()) {
            TransferException ex = TransferException.of("pdx_some_call", e.getKey().code());
            assertInstanceOf(e.getValue(), ex, e.getKey().name());
            assertEquals(e.getKey(), ex.status());
            assertTrue(ex.getMessage().contains("pdx_some_call") && ex.getMessage().contains("(" + e.getKey().code() + ")"),
                    ex.getMessage());
        }
    }

    @Test
    void anUndocumentedCodeIsStillTypedAndKeepsItsNumber() {
        TransferException ex = TransferException.of("pdx_read_post", -77);

        assertInstanceOf(TransferException.NativeFailure.class, ex);
        assertEquals(NativeStatus.UNRECOGNIZED, ex.status());
        assertEquals(-77, ex.code());
        assertTrue(ex.getMessage().contains("(-77)"), ex.getMessage());
    }
}
