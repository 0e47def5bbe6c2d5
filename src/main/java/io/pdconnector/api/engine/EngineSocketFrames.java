package io.pdconnector.api.engine;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;

/**
 * The engine socket's framing: a 4-byte big-endian length, 1 to the limit, then that many bytes of UTF-8 JSON.
 * A length out of bounds cannot be resynchronised from, so it ends the connection ({@link BadFrame}).
 */
final class EngineSocketFrames {

    /** A frame whose length is 0 or over the limit. */
    static final class BadFrame extends IOException {
        BadFrame(String message) {
            super(message);
        }
    }

    private EngineSocketFrames() {
    }

    /** One frame's bytes; null when the peer closed the connection between frames. */
    static byte[] read(ReadableByteChannel channel, int maxBytes) throws IOException {
        ByteBuffer header = ByteBuffer.allocate(4);
        if (!fill(channel, header, true)) {
            return null;
        }
        int length = header.flip().getInt();
        if (length <= 0 || length > maxBytes) {
            throw new BadFrame("frame length " + Integer.toUnsignedString(length) + " is not within 1 to " + maxBytes);
        }
        ByteBuffer body = ByteBuffer.allocate(length);
        fill(channel, body, false);
        return body.array();
    }

    static void write(WritableByteChannel channel, byte[] json) throws IOException {
        ByteBuffer frame = ByteBuffer.allocate(4 + json.length).putInt(json.length).put(json).flip();
        while (frame.hasRemaining()) {
            channel.write(frame);
        }
    }

    /** False only for an end of stream before the first byte when {@code endAllowed}. */
    private static boolean fill(ReadableByteChannel channel, ByteBuffer buffer, boolean endAllowed) throws IOException {
        while (buffer.hasRemaining()) {
            if (channel.read(buffer) < 0) {
                if (endAllowed && buffer.position() == 0) {
                    return false;
                }
                throw new EOFException("the connection ended inside a frame");
            }
        }
        return true;
    }
}
