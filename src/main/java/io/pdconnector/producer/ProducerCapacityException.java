package io.pdconnector.producer;

/** P cannot take the request now (no free blocks); maps to 503, the router may retry or pick another P. */
public final class ProducerCapacityException extends RuntimeException {

    public ProducerCapacityException(String message) {
        super(message);
    }
}
