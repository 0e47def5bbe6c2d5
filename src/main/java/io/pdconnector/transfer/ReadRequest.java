package io.pdconnector.transfer;

/** A posted READ; released once through {@link TransferAgent#release(ReadRequest)}. */
public interface ReadRequest {

    String remoteAgent();

    int descriptorCount();

    long bytes();
}
